package replicas

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// topologySpecs prove the environment is the shipped topology: the apiserver's
// webhook calls reach both replicas, and one of them leads.
func topologySpecs() {
	It("spreads admission over both replicas, and exactly one leads", func(ctx context.Context) {
		Expect(env.Replicas).To(HaveLen(2))
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, fixtures.MPIRuntime("topology-"+ns))
		before := env.Proxy.Accepted()

		// In parallel, and more than the apiserver keeps idle (25 per host:
		// client-go's transport cache, idleConnsPerHost): it reuses idle
		// connections, which earlier specs' bursts leave, possibly all on one
		// replica; past them it must dial new ones, which the proxy spreads.
		const jobs = 40
		errs := inParallel(jobs, func(i int) error {
			return env.Client.Create(ctx, fixtures.TrainJob(ns, fmt.Sprintf("job-%02d", i), rt.Name).NumNodes(1).Obj())
		})
		for _, err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}

		after := env.Proxy.Accepted()
		for i := range after {
			Expect(after[i]).To(BeNumerically(">", before[i]), "replica %d accepted no connection (before %v, after %v)", i, before, after)
		}
		decisions := env.DecisionsPerReplica(decisionsOf(ns, "CREATE"))
		Expect(sum(decisions)).To(Equal(jobs), "one decision per create, per replica %v", decisions)
		Expect(decisions).To(HaveEach(BeNumerically(">", 0)), "decisions per replica")

		leaders := 0
		for _, r := range env.Replicas {
			if r.IsLeader() {
				leaders++
			}
		}
		Expect(leaders).To(Equal(1), "replicas holding the lease")
	})
}

// faultSpecs prove the proxy's fault switch against the real apiserver: what
// tests of "a replica died after deciding" rely on.
func faultSpecs() {
	It("fails a request whose answer the proxy drops, and only that one", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, fixtures.MPIRuntime("fault-"+ns))
		attempt := 0
		// The apiserver may dial a connection ahead of need, before the drop
		// is armed; then the request is not dropped and the next attempt re-arms.
		Eventually(func() error {
			attempt++
			env.Proxy.DropNextResponses(1)
			env.Proxy.CloseConnections()
			return env.Client.Create(ctx, fixtures.TrainJob(ns, fmt.Sprintf("dropped-%d", attempt), rt.Name).NumNodes(1).Obj())
		}).Should(MatchError(And(ContainSubstring("failed calling webhook"), ContainSubstring("EOF"))))
		Expect(env.Proxy.Dropped()).To(BeNumerically(">=", 1))

		// Disarmed, with any marked connection left idle closed: admission works.
		env.Proxy.DropNextResponses(0)
		env.Proxy.CloseConnections()
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "after", rt.Name).NumNodes(1).Obj())).To(Succeed())
	})
}
