package lifecycle

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	reports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/internal/audit"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// editSnapshotGPUs writes into the snapshot cm, as a tenant could, its
// runtime with gpus per Worker.
func editSnapshotGPUs(ctx context.Context, cm *corev1.ConfigMap, gpus string) {
	GinkgoHelper()
	var copied trainer.ClusterTrainingRuntime
	Expect(yaml.Unmarshal([]byte(cm.Data["runtime"]), &copied)).To(Succeed())
	copied.Spec = fixtures.GPUWorkersRuntime(copied.Name, gpus).Cluster().Spec
	edited, err := yaml.Marshal(&copied)
	Expect(err).NotTo(HaveOccurred())
	cm.Data["runtime"] = string(edited)
	Expect(env.Client.Update(ctx, cm)).To(Succeed())
}

// auditReport reads namespace ns's audit Report; nil when there is none.
func auditReport(ctx context.Context, ns string) *reports.Report {
	GinkgoHelper()
	r := &reports.Report{}
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: audit.ReportName}, r)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	return r
}

var _ = Describe("a resume, which the Trainer builds from the job's runtime snapshot", func() {
	It("is judged and charged on the snapshot, not on the runtime an admin changed since", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		gpuQuota(ctx, ns, "16")
		rt := gpuRuntime(ctx, "snapshot-"+ns, "8")
		job := admitted(ctx, gpuJob(ns, "big", rt.Name, 2, 8).Suspend(true).Obj())
		snapshot(ctx, job)

		By("the admin lowers the runtime to 4 GPUs per Worker")
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rt), rt)).To(Succeed())
		rt.Spec = fixtures.GPUWorkersRuntime(rt.Name, "4").Cluster().Spec
		Expect(env.Client.Update(ctx, rt)).To(Succeed())

		By("the resume holds what the Trainer's JobSet asks for: 2 Workers x 8 GPUs")
		Expect(resume(ctx, job)).To(Succeed())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		e := entryOf(ctx, job)
		Expect(e).NotTo(BeNil(), "the resumed job holds no quota")
		Expect(gpusOf(e)).To(BeEquivalentTo(16))
		Eventually(func() int64 { return jobSetGPUs(ctx, job) }, timeout, interval).Should(Equal(gpusOf(e)),
			"the reservation charges what the Trainer's JobSet has")

		By("a job that fits only next to what today's runtime would charge is refused")
		msg := denial(ctx, gpuJob(ns, "small", rt.Name, 2, 4).Obj())
		Expect(msg).To(ContainSubstring("[aggregate-quota]"))
		Expect(msg).To(ContainSubstring(ns+"/big"), "the denial names who holds the quota")
	})

	It("is judged on what a tenant wrote into the snapshot, and refused with the Trainer's reason when the Trainer would refuse the snapshot", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		gpuQuota(ctx, ns, "16")
		rt := gpuRuntime(ctx, "edited-"+ns, "4")
		job := admitted(ctx, gpuJob(ns, "edited", rt.Name, 2, 4).Suspend(true).Obj())
		cm := snapshot(ctx, job)

		By("a tenant raises the snapshot's Workers to 16 GPUs each")
		editSnapshotGPUs(ctx, cm, "16")

		err := resume(ctx, job)
		Expect(err).To(HaveOccurred(), "the resume of an edited snapshot was admitted on the runtime's numbers")
		Expect(err.Error()).To(ContainSubstring("[aggregate-quota]"))
		Expect(err.Error()).To(ContainSubstring("needs 32 nvidia.com/gpu"))
		Expect(entryOf(ctx, job)).To(BeNil(), "a denied resume holds nothing")

		By("a snapshot the Trainer cannot read")
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		cm.Data = map[string]string{"runtime-copy": cm.Data["runtime"]}
		Expect(env.Client.Update(ctx, cm)).To(Succeed())
		err = resume(ctx, job)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`snapshot ConfigMap missing "runtime" data key`))
		Expect(err.Error()).To(ContainSubstring("delete the ConfigMap"))
	})

	It("is what audit judges a waiting job on, and a tenant's edit of it is reported once the job changes", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		gpuQuota(ctx, ns, "16")
		rt := gpuRuntime(ctx, "audited-"+ns, "4")
		job := admitted(ctx, gpuJob(ns, "waiting", rt.Name, 2, 4).Suspend(true).Obj())
		cm := snapshot(ctx, job)

		By("audited: 2 Workers x 4 GPUs fit 16, nothing listed")
		Eventually(func(g Gomega) {
			r := auditReport(ctx, ns)
			g.Expect(r).NotTo(BeNil())
			g.Expect(r.Summary.Pass).To(BeNumerically(">", 0))
			g.Expect(r.Results).To(BeEmpty())
		}, timeout, interval).Should(Succeed())

		By("a tenant raises the snapshot's Workers to 16 GPUs each, then labels the job")
		editSnapshotGPUs(ctx, cm, "16")
		// Audit remembers a job version's snapshot for the audit interval
		// (10 minutes): the job's change is what makes it read it again.
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		job.Labels = map[string]string{"team": "edited"}
		Expect(env.Client.Update(ctx, job)).To(Succeed())

		By("reported with the snapshot's numbers, as its resume would be refused")
		Eventually(func(g Gomega) {
			r := auditReport(ctx, ns)
			g.Expect(r).NotTo(BeNil())
			var failed []string
			for _, x := range r.Results {
				if x.Policy == "aggregate-quota" && x.Result == "fail" {
					failed = append(failed, x.Description)
				}
			}
			g.Expect(failed).To(ConsistOf(ContainSubstring("needs 32 nvidia.com/gpu")))
		}, timeout, interval).Should(Succeed())
	})
})
