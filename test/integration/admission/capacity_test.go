package admission

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// The node-capacity policy through the apiserver: Nodes are created as API
// objects (envtest has no kubelet) and every replica's Node informer must
// see them. Nodes are cluster-wide, so these specs run serially and remove
// their Nodes (and wait for the caches to drop them) before any other.
var _ = Describe("node capacity through the apiserver", Serial, func() {
	var ns string
	BeforeEach(func(ctx context.Context) {
		ns = env.Namespace(ctx, nil)
		// Two nodes of 8 GPUs, 64 CPUs and 256Gi each.
		for i := range 2 {
			env.CreateNode(ctx, framework.NodeOf(fmt.Sprintf("gpu-%s-%d", ns, i), map[string]string{"pool": "gpu"},
				fixtures.ResourceList("cpu", "64", "memory", "256Gi", "nvidia.com/gpu", "8")))
		}
	})

	It("denies a Worker larger than every node, with the numbers", func(ctx context.Context) {
		rt := createRuntime(ctx, gpuWorkers("capacity-16-"+ns, "16"))
		msg := denial(ctx, fixtures.TrainJob(ns, "too-large", rt.Name).NumNodes(2).NumProcPerNode(16).Obj())
		Expect(msg).To(ContainSubstring("[node-capacity] spec.trainer.resourcesPerNode: each Worker pod asks 16 nvidia.com/gpu; the largest of the 2 cluster nodes it may run on has 8 nvidia.com/gpu"))
	})

	It("admits a gang the nodes cannot hold at once, with a warning", func(ctx context.Context) {
		rt := createRuntime(ctx, gpuWorkers("capacity-4-"+ns, "4"))
		w := &warningsSeen{}
		Expect(clientWithWarnings(w).Create(ctx, fixtures.TrainJob(ns, "waits", rt.Name).NumNodes(6).NumProcPerNode(4).Obj())).To(Succeed())
		Expect(w.list).To(ContainElement(ContainSubstring("[node-capacity] spec.trainer.numNodes: the 6 Workers and the Launcher cannot all run at once: the nodes they may run on hold at most 4 Workers beside the Launcher (2 cluster nodes holding 2 each)")))
	})

	It("refuses a gang the nodes cannot hold at once when gangEnforcement is deny", func(ctx context.Context) {
		rt := createRuntime(ctx, gpuWorkers("capacity-deny-"+ns, "4"))
		params := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: "mpiguard-parameters", Labels: map[string]string{"mpiguard.io/policy": "parameters"}},
			Data:       map[string]string{"parameters.yaml": "policies:\n  node-capacity:\n    parameters: {gangEnforcement: deny}\n"},
		}
		Expect(env.Client.Create(ctx, params)).To(Succeed())
		gang := func(ctx context.Context, name string) error {
			return env.Client.Create(ctx, fixtures.TrainJob(ns, name, rt.Name).NumNodes(6).NumProcPerNode(4).Obj(), client.DryRunAll)
		}
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, params))).To(Succeed())
			// The specs after this one are judged with the default parameters again.
			Eventually(func() error { return gang(ctx, "after") }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		})
		Eventually(func() string {
			if err := gang(ctx, "refused"); err != nil {
				return err.Error()
			}
			return ""
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(ContainSubstring("[node-capacity] spec.trainer.numNodes: the 6 Workers and the Launcher cannot all run at once"))
	})

	It("admits a gang that fits, without a word", func(ctx context.Context) {
		rt := createRuntime(ctx, gpuWorkers("capacity-fits-"+ns, "4"))
		w := &warningsSeen{}
		Expect(clientWithWarnings(w).Create(ctx, fixtures.TrainJob(ns, "fits", rt.Name).NumNodes(4).NumProcPerNode(4).Obj())).To(Succeed())
		Expect(w.list).NotTo(ContainElement(ContainSubstring("node-capacity")))
	})
})
