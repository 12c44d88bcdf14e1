package runtimes

import (
	"context"
	"fmt"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	api "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/runtimes/smoketest"
)

// kubelet plays the parts envtest lacks (JobSet, Job and kubelet controllers) for
// one smoke-test TrainJob: it creates pods from the JobSet the real Trainer
// controller rendered and sets their status.
type kubelet struct {
	ns     string
	jobSet *jobsetv1alpha2.JobSet
}

// smokeTest creates a RuntimeTest and waits until the Trainer has turned its
// TrainJob into a JobSet and an MPI hostfile.
func smokeTest(ctx context.Context, ns, name string, mutate func(*api.RuntimeTest)) (*api.RuntimeTest, *kubelet) {
	GinkgoHelper()
	rt := &api.RuntimeTest{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       api.RuntimeTestSpec{RuntimeRef: api.RuntimeRef{Name: "mpiguard-openmpi-v2"}, Workers: 2, SlotsPerWorker: 1},
	}
	if mutate != nil {
		mutate(rt)
	}
	Expect(env.Client.Create(ctx, rt)).To(Succeed())
	k := &kubelet{ns: ns, jobSet: &jobsetv1alpha2.JobSet{}}
	jobName := name + smoketest.TrainJobSuffix
	Eventually(func() error { return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobName}, k.jobSet) }, timeout, interval).
		Should(Succeed(), "the Trainer controller renders the smoke-test TrainJob into a JobSet")
	var hostfile corev1.ConfigMap
	Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobName + trainerconstants.MPIHostfileConfigMapSuffix}, &hostfile)
	}, timeout, interval).Should(Succeed())
	return rt, k
}

// pod creates pod i of the replicated job as the Job controller would and binds it.
func (k *kubelet) pod(ctx context.Context, job string, i int) *corev1.Pod {
	GinkgoHelper()
	var tpl *corev1.PodTemplateSpec
	for _, rj := range k.jobSet.Spec.ReplicatedJobs {
		if rj.Name == job {
			tpl = rj.Template.Spec.Template.DeepCopy()
		}
	}
	Expect(tpl).NotTo(BeNil(), "replicated job %s in the JobSet", job)
	p := &corev1.Pod{ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
	p.Namespace, p.Name = k.ns, fmt.Sprintf("%s-%s-0-%d", k.jobSet.Name, job, i)
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[jobsetv1alpha2.JobSetNameKey] = k.jobSet.Name
	p.Labels[jobsetv1alpha2.ReplicatedJobNameKey] = job
	p.Spec.NodeName = fmt.Sprintf("node-%d", i)
	Expect(env.Client.Create(ctx, p)).To(Succeed())
	return p
}

// status sets the pod's status the way the kubelet reports it.
func (k *kubelet) status(ctx context.Context, p *corev1.Pod, set func(*corev1.PodStatus)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		set(&p.Status)
		g.Expect(env.Client.Status().Update(ctx, p)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

func readyWorker(image string) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		s.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", Image: image, ImageID: "sha256:1", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	}
}

func launcherExited(image string, code int32, message string) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		s.Phase = corev1.PodSucceeded
		if code != 0 {
			s.Phase = corev1.PodFailed
		}
		s.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", Image: image, ImageID: "sha256:1",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: message, FinishedAt: metav1.Now()}}}}
	}
}

func image(p *corev1.Pod) string { return p.Spec.Containers[0].Image }

type condSummary struct {
	Type   string
	Status metav1.ConditionStatus
	Reason string
}

func conditionsOf(ctx context.Context, rt *api.RuntimeTest) func(Gomega) []condSummary {
	return func(g Gomega) []condSummary {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rt), rt)).To(Succeed())
		var out []condSummary
		for _, c := range rt.Status.Conditions {
			out = append(out, condSummary{c.Type, c.Status, c.Reason})
		}
		return out
	}
}

func succeeded(ctx context.Context, rt *api.RuntimeTest) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rt), rt)).To(Succeed())
		return meta.FindStatusCondition(rt.Status.Conditions, api.ConditionSucceeded)
	}
}

func trainJobGone(ctx context.Context, rt *api.RuntimeTest) {
	GinkgoHelper()
	Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: rt.Namespace, Name: rt.Name + smoketest.TrainJobSuffix}, &trainer.TrainJob{})
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(BeTrue(), "the smoke-test TrainJob is removed after the verdict")
}

var _ = Describe("RuntimeTest", func() {
	It("passes on a working runtime: every condition True, TrainJob removed", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt, k := smokeTest(ctx, ns, "openmpi", nil)
		Eventually(conditionsOf(ctx, rt), timeout, interval).Should(ContainElement(condSummary{api.ConditionJobCreated, metav1.ConditionTrue, api.ReasonCreated}))
		Expect(rt.Status.Phase).To(Equal(api.PhaseRunning))
		var job trainer.TrainJob
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: k.jobSet.Name}, &job)).To(Succeed())
		Expect(*job.Spec.Trainer.NumNodes).To(BeEquivalentTo(3), "2 Workers + the launcher, which the curated runtimes run as a node")

		w0, w1 := k.pod(ctx, "node", 0), k.pod(ctx, "node", 1)
		k.status(ctx, w0, readyWorker(image(w0)))
		k.status(ctx, w1, readyWorker(image(w1)))
		Eventually(conditionsOf(ctx, rt), timeout, interval).Should(ContainElement(condSummary{api.ConditionSSHReady, metav1.ConditionTrue, api.ReasonWorkersReady}))

		launcher := k.pod(ctx, "launcher", 0)
		Expect(launcher.Spec.Containers[0].Command).To(Equal(smoketestCommand(rt)), "the TrainJob's launcher command reached the JobSet")
		k.status(ctx, launcher, launcherExited(image(launcher), 0, launcher.Name+"\n"+w0.Name+"\n"+w1.Name+"\n"))

		Eventually(conditionsOf(ctx, rt), timeout, interval).Should(Equal([]condSummary{
			{api.ConditionJobCreated, metav1.ConditionTrue, api.ReasonCreated},
			{api.ConditionPodsScheduled, metav1.ConditionTrue, api.ReasonAllScheduled},
			{api.ConditionImagesPulled, metav1.ConditionTrue, api.ReasonAllPulled},
			{api.ConditionSSHReady, metav1.ConditionTrue, api.ReasonWorkersReady},
			{api.ConditionMPISpawned, metav1.ConditionTrue, api.ReasonAllHosts},
			{api.ConditionSucceeded, metav1.ConditionTrue, api.ReasonPassed},
		}))
		Expect(rt.Status.Phase).To(Equal(api.PhaseSucceeded))
		Expect(rt.Status.HostsExpected).To(BeEquivalentTo(3), "from the hostfile the Trainer rendered: 2 Workers and the launcher")
		Expect(rt.Status.HostsSeen).To(BeEquivalentTo(3))
		trainJobGone(ctx, rt)
		Eventually(eventNotes(ctx, ns, rt.Name), timeout, interval).Should(ContainElement(ContainSubstring("Passed: runtime mpiguard-openmpi-v2: mpirun ran on all 3 hosts")))
	})

	It("fails on an image pull failure, naming the pod and the image", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt, k := smokeTest(ctx, ns, "badimage", func(rt *api.RuntimeTest) { rt.Spec.Image = "registry.invalid/nope:1" })
		w0, w1 := k.pod(ctx, "node", 0), k.pod(ctx, "node", 1)
		k.status(ctx, w0, readyWorker(image(w0)))
		k.status(ctx, w1, func(s *corev1.PodStatus) {
			s.Phase = corev1.PodPending
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", Image: "docker.io/mpioperator/openmpi:v0.6.0",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
		})
		Eventually(succeeded(ctx, rt), timeout, interval).Should(And(Not(BeNil()),
			HaveField("Reason", api.ReasonImagePullBackOff),
			HaveField("Message", ContainSubstring("pod "+w1.Name+" container node cannot pull image docker.io/mpioperator/openmpi:v0.6.0: ImagePullBackOff"))))
		Expect(rt.Status.Phase).To(Equal(api.PhaseFailed))
		Expect(meta.FindStatusCondition(rt.Status.Conditions, api.ConditionImagesPulled).Status).To(Equal(metav1.ConditionFalse))
		trainJobGone(ctx, rt)
	})

	It("fails when a Worker is OOMKilled", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt, k := smokeTest(ctx, ns, "oom", nil)
		w0, w1 := k.pod(ctx, "node", 0), k.pod(ctx, "node", 1)
		k.status(ctx, w0, readyWorker(image(w0)))
		k.status(ctx, w1, func(s *corev1.PodStatus) {
			readyWorker(image(w1))(s)
			s.ContainerStatuses[0].RestartCount = 1
			s.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
		})
		Eventually(succeeded(ctx, rt), timeout, interval).Should(And(Not(BeNil()),
			HaveField("Reason", api.ReasonOOMKilled),
			HaveField("Message", ContainSubstring("pod "+w1.Name+" container node was OOMKilled (exit code 137"))))
		trainJobGone(ctx, rt)
	})

	It("fails when mpirun ran on a single host (OpenMPI 5 ignoring the hostfile)", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt, k := smokeTest(ctx, ns, "singlehost", nil)
		w0, w1 := k.pod(ctx, "node", 0), k.pod(ctx, "node", 1)
		k.status(ctx, w0, readyWorker(image(w0)))
		k.status(ctx, w1, readyWorker(image(w1)))
		launcher := k.pod(ctx, "launcher", 0)
		k.status(ctx, launcher, launcherExited(image(launcher), 0, launcher.Name+"\n"))
		Eventually(succeeded(ctx, rt), timeout, interval).Should(And(Not(BeNil()),
			HaveField("Reason", api.ReasonSingleHost),
			HaveField("Message", ContainSubstring(fmt.Sprintf("launcher pod %s saw mpirun run on 1 host (%s) but the hostfile lists 3", launcher.Name, launcher.Name)))))
		Expect(meta.FindStatusCondition(rt.Status.Conditions, api.ConditionMPISpawned)).To(HaveField("Reason", api.ReasonSingleHost))
		Expect(rt.Status.HostsSeen).To(BeEquivalentTo(1))
		trainJobGone(ctx, rt)
	})

	It("counts the launcher as a host on a runLauncherAsNode runtime (DeepSpeed)", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt, k := smokeTest(ctx, ns, "deepspeed", func(rt *api.RuntimeTest) { rt.Spec.RuntimeRef.Name = "mpiguard-deepspeed" })
		var job trainer.TrainJob
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: k.jobSet.Name}, &job)).To(Succeed())
		Expect(*job.Spec.Trainer.NumNodes).To(BeEquivalentTo(3), "2 Workers + the launcher, which is a node")
		w0, w1 := k.pod(ctx, "node", 0), k.pod(ctx, "node", 1)
		k.status(ctx, w0, readyWorker(image(w0)))
		k.status(ctx, w1, readyWorker(image(w1)))
		launcher := k.pod(ctx, "launcher", 0)
		k.status(ctx, launcher, launcherExited(image(launcher), 0, launcher.Name+"\n"+w0.Name+"\n"+w1.Name+"\n"))
		Eventually(succeeded(ctx, rt), timeout, interval).Should(And(Not(BeNil()), HaveField("Reason", api.ReasonPassed)))
		Expect(rt.Status.HostsExpected).To(BeEquivalentTo(3), "the hostfile the Trainer rendered lists the launcher too")
		trainJobGone(ctx, rt)
	})

	It("launches Intel MPI with Hydra flags on a converted hostfile", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt, k := smokeTest(ctx, ns, "intel", func(rt *api.RuntimeTest) { rt.Spec.RuntimeRef.Name = "mpiguard-intelmpi" })
		launcher := k.pod(ctx, "launcher", 0)
		Expect(launcher.Spec.Containers[0].Command).To(HaveLen(3))
		Expect(launcher.Spec.Containers[0].Command[2]).To(And(ContainSubstring(`print h ":" s[2]`), ContainSubstring(`mpirun -f /tmp/mpiguard-hostfile -localhost "$(hostname -f)"`)))
		Expect(launcher.Spec.Containers[0].Image).To(Equal("docker.io/mpioperator/intel:v0.6.0"))
		Expect(rt.Spec.RuntimeRef.Name).To(Equal("mpiguard-intelmpi"))
	})

	It("times out, saying where it was stuck", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt, k := smokeTest(ctx, ns, "stuck", func(rt *api.RuntimeTest) { rt.Spec.TimeoutSeconds = 10 })
		w0 := k.pod(ctx, "node", 0)
		k.status(ctx, w0, readyWorker(image(w0)))
		Eventually(succeeded(ctx, rt), 40*time.Second, interval).Should(And(Not(BeNil()),
			HaveField("Reason", api.ReasonTimeout),
			HaveField("Message", ContainSubstring("no verdict after 10s: PodsScheduled is False (Waiting): 1 of 2 Worker pods exist"))))
		trainJobGone(ctx, rt)
	})
})

// smoketestCommand is the launcher command the controller puts in the TrainJob.
func smoketestCommand(rt *api.RuntimeTest) []string {
	var job trainer.TrainJob
	Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: rt.Namespace, Name: rt.Name + smoketest.TrainJobSuffix}, &job)).To(Succeed())
	return job.Spec.Trainer.Command
}

var _ = Describe("RuntimeTest whose TrainJob is deleted mid-test", func() {
	It("fails instead of silently starting over", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt, k := smokeTest(ctx, ns, "deleted", nil)
		Eventually(conditionsOf(ctx, rt), timeout, interval).Should(ContainElement(condSummary{api.ConditionJobCreated, metav1.ConditionTrue, api.ReasonCreated}))
		Expect(env.Client.Delete(ctx, &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: k.jobSet.Name}})).To(Succeed())
		Eventually(succeeded(ctx, rt), timeout, interval).Should(And(Not(BeNil()),
			HaveField("Reason", api.ReasonTrainJobFailed),
			HaveField("Message", ContainSubstring("was deleted before a verdict"))))
		Consistently(func() bool {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: k.jobSet.Name}, &trainer.TrainJob{})
			return apierrors.IsNotFound(err)
		}, "2s", interval).Should(BeTrue(), "not re-created")
	})
})
