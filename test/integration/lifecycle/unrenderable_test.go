package lifecycle

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/internal/reservations/admit"
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

	It("without a JobSet to charge it from fails its namespace's starting jobs closed, naming it, with a Warning Event on it", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		gpuQuota(ctx, ns, "16")
		// The apiserver's quota refuses the Trainer's JobSet: the job never
		// gets one to be charged from.
		env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "no-jobsets", "count/jobsets.jobset.x-k8s.io", "0"), nil)
		torch := env.CreateClusterRuntime(ctx, fixtures.TorchRuntime("torch-nojs-"+ns).Cluster())
		admitted(ctx, fixtures.TrainJob(ns, "huge-torch", torch.Name).NumNodes(render.MaxNumNodes+1).Obj())

		rt := gpuRuntime(ctx, "unknown-charge-"+ns, "8")
		Expect(denial(ctx, gpuJob(ns, "mpi", rt.Name, 1, 8).Obj())).To(ContainSubstring("TrainJob "+ns+"/huge-torch will create pods, but mpiguard cannot tell what it charges"),
			"the refusal names the job whose charge is unknown")
		Eventually(func() []string {
			var list eventsv1.EventList
			Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range list.Items {
				if e.Regarding.Name == "huge-torch" && e.Type == corev1.EventTypeWarning {
					reasons = append(reasons, e.Reason)
				}
			}
			return reasons
		}, timeout, interval).Should(ContainElement(admit.ReasonChargeUnknown), "no Warning Event on the job that blocks its namespace")
	})
})
