package replicas

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// The quota specs play the quota controller (createQuota); this one runs
// kube-controller-manager's, so status.used is what it counts of pods that
// exist and lowers when they finish, while both replicas decide.
var _ = Describe("two replicas with the real resourcequota controller", func() {
	It("admit exactly what fits beside pods the controller counts, and what their end frees", func(ctx context.Context) {
		env.RunQuotaController(ctx)
		rt := createRuntime(ctx, gpuWorkers("replicas-quota-controller", "4"))
		ns := env.Namespace(ctx, nil)
		env.CreateSyncedQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "80"))

		By("other work's pods hold 16 GPUs: the quota counts them")
		var busy []*corev1.Pod
		for _, name := range []string{"busy-0", "busy-1"} {
			busy = append(busy, env.CreateChargedPod(ctx, ns, name, nil, fixtures.ResourceList("nvidia.com/gpu", "8")))
		}
		env.EventuallyUsed(ctx, ns, "team-a", "requests.nvidia.com/gpu", "16")

		By("40 parallel creates of 8 GPUs each: (80 - 16) / 8 = 8 admitted, with both replicas serving")
		r := tally(ctx, ns, inParallel(submits, func(i int) error {
			return env.Client.Create(ctx, gpuJob(ns, i, rt.Name).Obj())
		}), "CREATE")
		Expect(r.unexpected).To(BeEmpty(), "%s", r)
		Expect(r.admitted).To(Equal(8), "%s", r)
		Expect(r.running).To(Equal(8), "%s", r)
		// Which replica decides depends on the apiserver's idle webhook
		// connections, which earlier specs leave (all 40 on one replica,
		// seen in CI): the topology spec checks the spread; this one checks
		// the arithmetic against the real controller with both serving.
		GinkgoWriter.Printf("decisions per replica: %v\n", r.decisions)

		By("those pods finish: the controller lowers used to 0, and the 16 GPUs fit 2 more jobs of 4 asked")
		for _, p := range busy {
			env.FinishPod(ctx, p)
		}
		env.EventuallyUsed(ctx, ns, "team-a", "requests.nvidia.com/gpu", "0")
		more := tally(ctx, ns, inParallel(4, func(i int) error {
			return env.Client.Create(ctx, gpuJob(ns, submits+i, rt.Name).Obj())
		}), "CREATE")
		Expect(more.unexpected).To(BeEmpty(), "%s", more)
		Expect(more.admitted).To(Equal(2), "%s", more)
		Expect(more.running).To(Equal(10), "%s", more)
	})
})
