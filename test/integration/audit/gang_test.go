package audit

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	reports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/mpiguard/mpiguard/internal/audit"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

var _ = Describe("audit of Volcano gangs", func() {
	It("reports a stored job whose queue shrank under its gang, with the queue and the numbers, and clears it when the queue grows back", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		q := env.CreateVolcanoQueue(ctx, fixtures.VolcanoQueue("q-"+ns, volcanov1beta1.QueueStateOpen, "16", "0"))
		rt := env.CreateClusterRuntime(ctx, fixtures.VolcanoRuntime("audit-volcano-"+ns, "4", q.Name).Cluster())
		// 3 Workers x 4 GPUs and the launcher: 12 GPUs, 4 pods, in one gang.
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "gang", rt.Name).NumNodes(3).NumProcPerNode(4).Obj())).To(Succeed())
		eventuallyPasses(ctx, ns, trainer.TrainJobKind, "gang", "gang-scheduling")

		By("the queue's capability lowered under the gang: reported")
		q.Spec.Capability = fixtures.ResourceList("nvidia.com/gpu", "8")
		env.UpdateVolcanoQueue(ctx, q)
		failed := eventuallyResult(ctx, ns, trainer.TrainJobKind, "gang", "gang-scheduling", reports.Result(audit.Fail))
		Expect(failed.Description).To(ContainSubstring(`the job's gang needs 12 nvidia.com/gpu (all 4 pods start together or none does) but Volcano queue %q can hold at most 8`, q.Name))

		By("raised again: cleared")
		q.Spec.Capability = fixtures.ResourceList("nvidia.com/gpu", "16")
		env.UpdateVolcanoQueue(ctx, q)
		eventuallyPasses(ctx, ns, trainer.TrainJobKind, "gang", "gang-scheduling")
	})
})
