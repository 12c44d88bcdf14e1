package replicas

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// gpuSecondsSpecs run after failoverSpecs: they stop the last original
// replica, so a replica that stood by all along takes the lease, then
// restart the suite's replicas.
func gpuSecondsSpecs() {
	It("counts a job's GPU-seconds across a leader change once: summed over the replicas, never more than the pods ran", func(ctx context.Context) {
		var leader *framework.Replica
		for _, r := range env.Replicas {
			if r.IsLeader() {
				leader = r
			}
		}
		Expect(leader).NotTo(BeNil(), "no replica leads")
		// A replica that stands by from before the pods start until the
		// handover (a process started long before it leads).
		standby, err := env.StartExtraReplica(ctx)
		Expect(err).NotTo(HaveOccurred())
		// Afterwards the suite's replicas serve again (the webhook proxy
		// sends only to them), for the specs that run after this one.
		DeferCleanup(func(ctx context.Context) {
			Expect(standby.Stop()).To(Succeed())
			Expect(env.RestartManagers(ctx, components)).To(Succeed())
		})
		Expect(standby.IsLeader()).To(BeFalse())

		// Its pods, as the JobSet and a kubelet would make and run them
		// (no JobSet controller runs here): a Launcher and a Worker of 4
		// GPUs each, running since now by their containers' start.
		ns := env.Namespace(ctx, map[string]string{pipeline.ExemptLabel: "true"})
		rt := createRuntime(ctx, fixtures.MPIRuntime("gpu-seconds-"+ns))
		job := fixtures.TrainJob(ns, "gpus", rt.Name).NumNodes(2).Obj()
		Expect(env.Client.Create(ctx, job)).To(Succeed())
		const gpusPerPod = 4
		var started []time.Time
		for _, role := range []string{"launcher", "node"} {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gpus-" + role + "-0-0",
				Labels: map[string]string{jobsetv1alpha2.JobSetNameKey: job.Name, jobsetv1alpha2.ReplicatedJobNameKey: role}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "mpi", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpusPerPod, resource.DecimalSI)},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpusPerPod, resource.DecimalSI)}}}}}}
			Expect(env.Client.Create(ctx, p)).To(Succeed())
			now := metav1.NewTime(time.Now().Truncate(time.Second))
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, ContainerStatuses: []corev1.ContainerStatus{{Name: "node", Image: "mpi", ImageID: "mpi", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}}
			Expect(env.Client.Status().Update(ctx, p)).To(Succeed())
			started = append(started, now.Time)
		}
		truth := func(at time.Time) float64 {
			var s float64
			for _, t := range started {
				s += gpusPerPod * at.Sub(t).Seconds()
			}
			return s
		}
		Eventually(func() float64 { return gpuSeconds(ns) }).Should(BeNumerically(">", 0), "the leader counts the running pods")
		time.Sleep(10 * time.Second)

		By("the leader stops; the replica that stood by takes the lease")
		handover := time.Now()
		Expect(leader.Stop()).To(Succeed())
		Eventually(standby.IsLeader).WithTimeout(time.Minute).Should(BeTrue(), "the standby never took the lease")
		elected := time.Now()
		Eventually(func() float64 { return gpuSeconds(ns) }).WithTimeout(30*time.Second).Should(BeNumerically(">", truth(handover)),
			"the new leader counts the running pods")
		time.Sleep(10 * time.Second)

		// The metrics endpoint of every replica of this process serves the
		// same registry: the sum over the replicas' ledgers, as
		// sum(increase()) over the replicas' series adds them up.
		got := gpuSeconds(ns)
		at := time.Now()
		lost := 2 * gpusPerPod * elected.Sub(handover).Seconds()
		GinkgoWriter.Printf("GPU-seconds %.0f; the pods ran %.0f; the handover took %s\n", got, truth(at), elected.Sub(handover))
		Expect(got).To(BeNumerically("<=", truth(at)), "more GPU-seconds than the pods ran: an interval counted twice")
		Expect(got).To(BeNumerically(">=", truth(at)-lost-2*gpusPerPod*2), "more lost than the handover (%s)", elected.Sub(handover))
	})
}

// gpuSeconds is mpiguard_job_gpu_seconds_total of namespace ns, as the
// process's registry serves it.
func gpuSeconds(ns string) float64 {
	GinkgoHelper()
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "mpiguard_job_gpu_seconds_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == ns {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
