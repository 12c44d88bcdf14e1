package runtimes

import (
	"context"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/render"
)

// The Trainer (v2.3) merges TrainJob.spec.trainer.resourcesPerNode into the
// ancestor-labelled job (the curated launcher) and, only with runLauncherAsNode,
// into the node job. These specs prove that on a curated runtime the GPUs a
// TrainJob asks for per node reach the Worker pods, as the real Trainer
// controller builds them and as the render package predicts.
var _ = Describe("resourcesPerNode on a curated runtime", func() {
	nodeContainer := func(spec corev1.PodSpec) corev1.Container {
		GinkgoHelper()
		for _, c := range spec.Containers {
			if c.Name == trainerconstants.Node {
				return c
			}
		}
		Fail("no container named node")
		return corev1.Container{}
	}
	gpus := resource.MustParse("4")
	perNode := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"nvidia.com/gpu": gpus, corev1.ResourceCPU: resource.MustParse("8")},
		Limits:   corev1.ResourceList{"nvidia.com/gpu": gpus},
	}
	sameResources := func(want corev1.ResourceRequirements) OmegaMatcher {
		return And(
			HaveField("Requests", HaveLen(len(want.Requests))),
			HaveField("Limits", HaveLen(len(want.Limits))),
			WithTransform(func(r corev1.ResourceRequirements) bool {
				for k, q := range want.Requests {
					if got, ok := r.Requests[k]; !ok || got.Cmp(q) != 0 {
						return false
					}
				}
				for k, q := range want.Limits {
					if got, ok := r.Limits[k]; !ok || got.Cmp(q) != 0 {
						return false
					}
				}
				return true
			}, BeTrue()),
		)
	}

	DescribeTable("gives the Worker pods the GPUs, through the real Trainer controller and the render package",
		func(ctx context.Context, runtimeName string) {
			ns := env.Namespace(ctx, nil)
			job := &trainer.TrainJob{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gpus"},
				Spec: trainer.TrainJobSpec{
					RuntimeRef: trainer.RuntimeRef{Name: runtimeName},
					Trainer: &trainer.Trainer{
						NumNodes:         ptr.To[int32](3), // the launcher + 2 Workers
						NumProcPerNode:   ptr.To[int32](4), // one slot per GPU
						ResourcesPerNode: perNode.DeepCopy(),
						Args:             []string{"python", "train.py"},
					},
				},
			}
			Expect(env.Client.Create(ctx, job)).To(Succeed())

			By("the JobSet the Trainer controller created")
			var js jobsetv1alpha2.JobSet
			Eventually(func() error { return env.Client.Get(ctx, client.ObjectKeyFromObject(job), &js) }, timeout, interval).Should(Succeed())
			jobs := map[string]jobsetv1alpha2.ReplicatedJob{}
			for _, rj := range js.Spec.ReplicatedJobs {
				jobs[rj.Name] = rj
			}
			Expect(jobs).To(HaveKey("node"))
			Expect(jobs).To(HaveKey("launcher"))
			Expect(nodeContainer(jobs["node"].Template.Spec.Template.Spec).Resources).To(sameResources(perNode), "Worker resources")
			Expect(jobs["node"].Template.Spec.Parallelism).To(HaveValue(BeEquivalentTo(2)), "Workers = numNodes - 1")
			Expect(jobs["launcher"].Template.Spec.Parallelism).To(HaveValue(BeEquivalentTo(1)))
			Expect(nodeContainer(jobs["launcher"].Template.Spec.Template.Spec).Resources).To(sameResources(perNode), "launcher resources: it runs ranks too")

			var hostfile corev1.ConfigMap
			Eventually(func() error {
				return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name + trainerconstants.MPIHostfileConfigMapSuffix}, &hostfile)
			}, timeout, interval).Should(Succeed())
			Expect(strings.Split(strings.TrimSpace(hostfile.Data[trainerconstants.MPIHostfileName]), "\n")).To(Equal([]string{
				"gpus-node-0-0.gpus slots=4",
				"gpus-node-0-1.gpus slots=4",
				"gpus-launcher-0-0.gpus slots=4",
			}))

			By("the render package predicts the same pods")
			var stored trainer.TrainJob
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), &stored)).To(Succeed())
			var published trainer.ClusterTrainingRuntime
			Expect(env.Client.Get(ctx, client.ObjectKey{Name: runtimeName}, &published)).To(Succeed())
			renderer, err := render.NewRenderer(ctx)
			Expect(err).NotTo(HaveOccurred())
			view, err := renderer.Render(ctx, render.Input{TrainJob: &stored, Runtime: &published})
			Expect(err).NotTo(HaveOccurred())
			Expect(view.Workers.Pods).To(BeEquivalentTo(2))
			Expect(view.GPUsPerWorker).To(BeEquivalentTo(4))
			Expect(nodeContainer(view.Workers.PodTemplate.Spec).Resources).To(sameResources(nodeContainer(jobs["node"].Template.Spec.Template.Spec).Resources))
			Expect(view.Hostfile).To(Equal(strings.Split(strings.TrimSpace(hostfile.Data[trainerconstants.MPIHostfileName]), "\n")))
		},
		Entry("OpenMPI", "mpiguard-openmpi"),
		Entry("Intel MPI", "mpiguard-intelmpi"),
		Entry("MPICH", "mpiguard-mpich"),
		Entry("DeepSpeed", "mpiguard-deepspeed"),
	)
})
