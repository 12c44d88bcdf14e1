package lifecycle

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/policies/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

var _ = Describe("a TrainJob mpiguard cannot render", func() {
	It("is charged from the JobSet the Trainer built for it, and does not block MPI creates in its namespace", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		gpuQuota(ctx, ns, "16")
		torch := env.CreateClusterRuntime(ctx, fixtures.TorchRuntime("torch-"+ns).Cluster())
		// Not MPI, so not governed: admitted untouched. Beyond the nodes
		// mpiguard renders, so it cannot be rendered as another job's holder.
		big := admitted(ctx, fixtures.TrainJob(ns, "huge-torch", torch.Name).NumNodes(render.MaxNumNodes+1).Obj())
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(big), &jobset.JobSet{})
		}, timeout, interval).Should(Succeed(), "the Trainer never built the torch job's JobSet")

		rt := gpuRuntime(ctx, "unrenderable-"+ns, "8")
		admitted(ctx, gpuJob(ns, "mpi", rt.Name, 2, 8).Obj())
		Expect(denial(ctx, gpuJob(ns, "over", rt.Name, 1, 8).Obj())).To(ContainSubstring("[aggregate-quota]"),
			"the quota is still judged in full")
	})
})
