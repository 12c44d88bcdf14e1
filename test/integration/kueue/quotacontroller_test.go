package kueue

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/internal/kueuecheck"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// The other specs set the quota's status.used by hand; this one runs
// kube-controller-manager's resourcequota controller, which counts the pods
// that hold the quota and gives it back when they finish.
var _ = Describe("mpiguard's AdmissionCheck with the real resourcequota controller", func() {
	It("makes a job retry while pods the controller counts fill the quota, and says Ready once they finish", func(ctx context.Context) {
		env.RunQuotaController(ctx)
		ns := queuedNamespace(ctx, euQueue, "", "")
		env.CreateSyncedQuota(ctx, fixtures.ResourceQuota(ns, "gpus", "requests.nvidia.com/gpu", "8"))
		busy := env.CreateChargedPod(ctx, ns, "busy", nil, fixtures.ResourceList("nvidia.com/gpu", "8"))
		env.EventuallyUsed(ctx, ns, "gpus", "requests.nvidia.com/gpu", "8")
		job := submit(ctx, ns, "waits")

		By("Retry with mpiguard's quota message, counting the pod's 8 GPUs; the job stays suspended")
		Eventually(func(g Gomega) []string {
			return warnings(ctx, g, job, kueuecheck.ReasonRetry)
		}).Should(ContainElement(And(ContainSubstring("[aggregate-quota]"), ContainSubstring("has 0 of 8 free"))))
		Expect(running(ctx, job)).To(BeFalse())

		By("the pod finishes: the controller lowers used to 0, Kueue's next offer is Ready, and the job runs")
		env.FinishPod(ctx, busy)
		env.EventuallyUsed(ctx, ns, "gpus", "requests.nvidia.com/gpu", "0")
		Eventually(func(g Gomega) {
			wl := workloadOf(ctx, g, job)
			g.Expect(check(g, wl).State).To(Equal(kueue.CheckStateReady), describe(wl))
			g.Expect(running(ctx, job)).To(BeTrue())
		}).Should(Succeed())
	})
})
