package admission

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/reservations/retire"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// The other specs play the quota controller (CreateQuota, setUsed); this one
// runs kube-controller-manager's: status.used is what it counts of the pods
// that exist, and what the apiserver's quota admission charges them.
var _ = Describe("quota reservations with the real resourcequota controller", func() {
	It("hold a job's GPUs until its pods exist, leave them to the status.used the controller computes, and free them once the job's pods finished and the job completed", func(ctx context.Context) {
		env.RunQuotaController(ctx)
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("quota-controller-"+ns, "4"))
		env.CreateSyncedQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "16"))
		admitted(ctx, fixtures.TrainJob(ns, "first", rt.Name).NumNodes(2).NumProcPerNode(4).Obj())
		Expect(env.ReservedJobs(ctx, ns)).To(Equal([]string{"first"}))

		By("the Launcher and one Worker exist: the quota counts the Worker's 4 GPUs, the entry keeps the missing one's")
		gpus := fixtures.ResourceList("nvidia.com/gpu", "4")
		createPod(ctx, ns, "first", "launcher", nil)
		createPod(ctx, ns, "first", "node", gpus)
		env.EventuallyUsed(ctx, ns, "team-a", "requests.nvidia.com/gpu", "4")
		podsCached(ctx, ns, 2)
		// 16 - 4 used - 4 the missing Worker still needs.
		Expect(denial(ctx, fixtures.TrainJob(ns, "second", rt.Name).NumNodes(3).NumProcPerNode(4).Obj())).To(ContainSubstring("has 8 of 16 free"))

		By("every pod exists: the quota counts 8, the entry goes")
		createPod(ctx, ns, "first", "node", gpus)
		env.EventuallyUsed(ctx, ns, "team-a", "requests.nvidia.com/gpu", "8")
		Eventually(func() []string { return env.ReservedJobs(ctx, ns) }).Should(BeEmpty())
		Expect(denial(ctx, fixtures.TrainJob(ns, "second", rt.Name).NumNodes(3).NumProcPerNode(4).Obj())).To(ContainSubstring("has 8 of 16 free"))

		By("the pods finish: the controller gives their GPUs back, but the job, not finished, may start them again")
		var pods corev1.PodList
		Expect(env.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		for i := range pods.Items {
			env.FinishPod(ctx, &pods.Items[i])
		}
		env.EventuallyUsed(ctx, ns, "team-a", "requests.nvidia.com/gpu", "0")
		Eventually(func() error {
			return env.Client.Create(ctx, fixtures.TrainJob(ns, "whole-quota", rt.Name).NumNodes(4).NumProcPerNode(4).Obj(), client.DryRunAll)
		}).Should(MatchError(ContainSubstring("0 used by running pods, 8 held by TrainJobs admitted whose pods do not exist yet: " + ns + "/first 8")))

		By("the job completes (the Trainer's condition): the whole quota is free")
		env.CompleteTrainJob(ctx, ns, "first")
		Eventually(func() error {
			return env.Client.Create(ctx, fixtures.TrainJob(ns, "whole-quota", rt.Name).NumNodes(4).NumProcPerNode(4).Obj())
		}).Should(Succeed())

		By("the controller's recomputes (the pods finished, its resync) were each compared with the pods: none counted less")
		Expect(reservationEvents(ctx, ns, retire.ReasonQuotaStatusBehind)).To(BeEmpty())
	})
})

// podsCached waits until mpiguard's cache lists n pods in ns: it reads which
// of a job's pods exist from there.
func podsCached(ctx context.Context, ns string, n int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(env.Manager.GetClient().List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(n))
	}).Should(Succeed())
}
