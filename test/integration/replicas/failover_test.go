package replicas

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// failoverSpecs stop a replica for good: they run last.
func failoverSpecs() {
	It("keeps admitting with one replica stopped, and the other takes the lease", func(ctx context.Context) {
		// Stop the leader: the harder case, its reconcilers must move too.
		var stopped, survivor *framework.Replica
		for _, r := range env.Replicas {
			if r.IsLeader() {
				stopped = r
			} else {
				survivor = r
			}
		}
		Expect(stopped).NotTo(BeNil(), "no replica leads")
		Expect(survivor).NotTo(BeNil(), "every replica leads")

		// A reservation whose TrainJob never appears, as a replica that died
		// between its decision and the create leaves one: the apiserver's own
		// quota admission (after the webhooks) refuses the TrainJob object.
		orphan := env.Namespace(ctx, nil)
		gpuRT := createRuntime(ctx, gpuWorkers("orphan-"+orphan, "4"))
		createQuota(ctx, fixtures.ResourceQuota(orphan, "team-a", "requests.nvidia.com/gpu", "8"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		createQuota(ctx, fixtures.ResourceQuota(orphan, "no-trainjobs", "count/trainjobs.trainer.kubeflow.org", "0"), fixtures.ResourceList("count/trainjobs.trainer.kubeflow.org", "0"))
		Expect(env.Client.Create(ctx, fixtures.TrainJob(orphan, "never", gpuRT.Name).NumNodes(2).NumProcPerNode(4).Obj())).
			To(MatchError(ContainSubstring("no-trainjobs")))
		Expect(env.ReservedJobs(ctx, orphan)).To(Equal([]string{"never"}))

		Expect(stopped.Stop()).To(Succeed())
		Eventually(survivor.IsLeader).Should(BeTrue(), "the surviving replica never took the lease")
		Eventually(func() []string { return env.ReservedJobs(ctx, orphan) }).WithTimeout(reservationGrace+20*time.Second).Should(BeEmpty(),
			"the new leader releases, after the grace, the reservation of a TrainJob that never appeared")
		Expect(env.Client.Delete(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: orphan, Name: "no-trainjobs"}})).To(Succeed())
		Eventually(func() error {
			return env.Client.Create(ctx, fixtures.TrainJob(orphan, "fits", gpuRT.Name).NumNodes(2).NumProcPerNode(4).Obj())
		}).Should(Succeed(), "the namespace's whole quota is free again")

		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, fixtures.MPIRuntime("failover-"+ns))
		const jobs = 6
		errs := inParallel(jobs, func(i int) error {
			return env.Client.Create(ctx, fixtures.TrainJob(ns, fmt.Sprintf("job-%02d", i), rt.Name).NumNodes(1).Obj())
		})
		for _, err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}
		decisions := env.DecisionsPerReplica(decisionsOf(ns, "CREATE"))
		for i, r := range env.Replicas {
			want := 0
			if r == survivor {
				want = jobs
			}
			Expect(decisions[i]).To(Equal(want), "decisions of replica %d (%s), all: %v", i, r.Addr, decisions)
		}
	})
}
