package admission

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/reservations/retire"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// kube-controller-manager's resourcequota controller recomputes status.used
// from the pods its informer has seen; a recompute that listed them before
// a job's pods were created and wrote after leaves them out until its next
// sync (the replicas suite's CI run saw 8 of 16 GPUs for 30 s). This spec
// writes what such a recompute writes, when it would: the race itself
// cannot be forced on the real controller.
var _ = Describe("a ResourceQuota whose status misses pods just created", func() {
	It("is read as counting them: the leader records what it lacks until it counts them", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("status-behind-"+ns, "4"))
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "16"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		admitted(ctx, fixtures.TrainJob(ns, "first", rt.Name).NumNodes(2).NumProcPerNode(4).Obj())
		next := func() string {
			return denial(ctx, fixtures.TrainJob(ns, "second", rt.Name).NumNodes(3).NumProcPerNode(4).Obj())
		}
		uncounted := func() []string {
			var out []string
			if res := env.Reservation(ctx, ns); res != nil {
				for _, u := range res.Spec.Uncounted {
					for name, q := range u.Usage {
						out = append(out, u.ResourceQuota+" "+string(name)+" "+q.String())
					}
				}
			}
			return out
		}

		By("the job's pods are created (the apiserver charges their 8 GPUs), and a recompute that missed them writes 0")
		gpus := fixtures.ResourceList("nvidia.com/gpu", "4")
		createPod(ctx, ns, "first", "launcher", nil)
		createPod(ctx, ns, "first", "node", gpus)
		createPod(ctx, ns, "first", "node", gpus)
		setUsed(ctx, ns, "team-a", fixtures.ResourceList("requests.nvidia.com/gpu", "0"))

		By("the leader records the 8 GPUs the quota lacks, and keeps the record after the job's entry goes")
		Eventually(uncounted).Should(Equal([]string{"team-a requests.nvidia.com/gpu 8"}))
		Eventually(func() []string { return env.ReservedJobs(ctx, ns) }).Should(BeEmpty())
		Expect(uncounted()).To(Equal([]string{"team-a requests.nvidia.com/gpu 8"}))
		Eventually(func() []string { return reservationEvents(ctx, ns, retire.ReasonQuotaStatusBehind) }).Should(ContainElement(
			ContainSubstring("ResourceQuota " + ns + "/team-a counts 0 of requests.nvidia.com/gpu in status.used where the pods that exist charge 8")))

		By("admission counts them: 16 - (0 + 8) leaves 8, not 16, for a job of 12; the denial says why kubectl shows 0 used")
		Expect(next()).To(ContainSubstring("has 8 of 16 free (8 used by running pods, 8 of them not yet in its status.used (its controller missed pods created meanwhile))"))

		By("the controller's next count has the pods: the record goes, the next job still does not fit")
		setUsed(ctx, ns, "team-a", fixtures.ResourceList("requests.nvidia.com/gpu", "8"))
		Eventually(func() *v1alpha1.QuotaReservation { return env.Reservation(ctx, ns) }).Should(BeNil())
		Expect(next()).To(ContainSubstring("has 8 of 16 free"))
	})
})
