package replicas

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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
		Expect(stopped.Stop()).To(Succeed())
		Eventually(survivor.IsLeader).Should(BeTrue(), "the surviving replica never took the lease")

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
