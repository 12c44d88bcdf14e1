package admission

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

var _ = Describe("the TrainJob validating webhook", func() {
	var ns string
	BeforeEach(func(ctx context.Context) {
		ns = env.Namespace(ctx, nil)
	})

	It("denies an MPI TrainJob without Workers with the webhook's message", func(ctx context.Context) {
		rt := fixtures.MPIRuntime("mpi-numnodes-" + ns).Cluster()
		Expect(env.Client.Create(ctx, rt)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, rt)).To(Succeed()) })

		job := fixtures.TrainJob(ns, "no-workers", rt.Name).NumNodes(0).Obj()
		err := env.Client.Create(ctx, job)
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want a webhook denial, got %v", err)
		Expect(err.Error()).To(ContainSubstring(`admission webhook "vtrainjob.mpiguard.io" denied the request`))
		Expect(err.Error()).To(ContainSubstring("[slots-gpus] spec.trainer.numNodes: TrainJob has 0 hostfile nodes"))
		Expect(err.Error()).To(ContainSubstring("set spec.trainer.numNodes to 1 or more"))
	})

	It("admits an MPI TrainJob with Workers", func(ctx context.Context) {
		rt := fixtures.MPIRuntime("mpi-ok-" + ns).Cluster()
		Expect(env.Client.Create(ctx, rt)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, rt)).To(Succeed()) })

		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "two-workers", rt.Name).NumNodes(2).Obj())).To(Succeed())
	})

	It("admits a non-MPI TrainJob untouched", func(ctx context.Context) {
		rt := fixtures.TorchRuntime("torch-" + ns).Cluster()
		Expect(env.Client.Create(ctx, rt)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, rt)).To(Succeed()) })

		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "torch", rt.Name).NumNodes(0).Obj())).To(Succeed())
	})

	It("refuses a TrainJob whose runtime does not exist, saying which", func(ctx context.Context) {
		err := env.Client.Create(ctx, fixtures.TrainJob(ns, "orphan", "no-such-runtime").NumNodes(1).Obj())
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`ClusterTrainingRuntime "no-such-runtime" not found`))
	})
})
