package runtimes

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/runtimes/constraints"
)

// TrainJobs are held to the constraints their runtime's annotations state, by
// the runtime-constraints policy (policies/runtime-constraints) behind the
// TrainJob webhooks the apiserver calls. The messages checked are the ones
// constraints.Check describes.
var _ = Describe("Runtime constraints on TrainJobs", func() {
	// constrainedRuntime creates a copy of the curated OpenMPI runtime with the
	// given constraint annotations.
	constrainedRuntime := func(ctx context.Context, annotations map[string]string, edits ...func(*trainer.TrainingRuntimeSpec)) *trainer.ClusterTrainingRuntime {
		GinkgoHelper()
		rt := &trainer.ClusterTrainingRuntime{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "limited-", Annotations: annotations},
			Spec:       curatedSpec("mpiguard-openmpi-v2"),
		}
		for _, edit := range edits {
			edit(&rt.Spec)
		}
		Expect(env.Client.Create(ctx, rt)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, rt))).To(Succeed()) })
		return rt
	}
	job := func(rt *trainer.ClusterTrainingRuntime, ns, name string, workers int32) *trainer.TrainJob {
		return &trainer.TrainJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: trainer.TrainJobSpec{
				RuntimeRef: trainer.RuntimeRef{Name: rt.Name},
				Trainer:    &trainer.Trainer{NumNodes: ptr.To(workers), Args: []string{"python", "train.py"}},
			},
		}
	}
	// withGPUs gives each node gpus GPUs: on the curated runtimes (launcher run
	// as a node) the Trainer puts them on the Worker pods and the launcher.
	withGPUs := func(tj *trainer.TrainJob, gpus int32) *trainer.TrainJob {
		q := resource.MustParse(fmt.Sprint(gpus))
		tj.Spec.Trainer.NumProcPerNode = ptr.To(gpus) // slots per worker = GPUs per worker (slots-gpus)
		tj.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"nvidia.com/gpu": q},
			Limits:   corev1.ResourceList{"nvidia.com/gpu": q},
		}
		return tj
	}
	// pinned adds a runtime patch that puts the Launcher and Worker pods on
	// nodes labelled pool=gpu.
	pinned := func(tj *trainer.TrainJob) *trainer.TrainJob {
		patch := func(name string) trainer.ReplicatedJobPatch {
			return trainer.ReplicatedJobPatch{Name: name, Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{
				Template: &trainer.PodTemplatePatch{Spec: &trainer.PodSpecPatch{NodeSelector: map[string]string{"pool": "gpu"}}},
			}}}
		}
		tj.Spec.RuntimePatches = append(tj.Spec.RuntimePatches, trainer.RuntimePatch{
			Manager: "example.com/placement",
			TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{
				ReplicatedJobs: []trainer.ReplicatedJobPatch{patch("launcher"), patch("node")},
			}}},
		})
		return tj
	}

	It("denies a TrainJob that exceeds its runtime's max-workers or runs outside its allowed namespaces", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := constrainedRuntime(ctx, map[string]string{
			constraints.AnnotationMaxNodes:          "2",
			constraints.AnnotationAllowedNamespaces: ns,
		})
		Expect(env.Client.Create(ctx, job(rt, ns, "fits", 2))).To(Succeed())

		err := env.Client.Create(ctx, job(rt, ns, "too-many", 3))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf(
			"[runtime-constraints] spec.trainer.numNodes: TrainJob asks for 3 hostfile nodes (spec.trainer.numNodes) but runtime %s allows at most 2 per TrainJob (mpiguard.io/max-nodes); lower spec.trainer.numNodes to 2 or less", rt.Name)))

		other := env.Namespace(ctx, nil)
		err = env.Client.Create(ctx, job(rt, other, "elsewhere", 1))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf(
			"[runtime-constraints] spec.runtimeRef.name: runtime %s may only be used from namespaces %s, and this TrainJob is in %q; use another runtime or ask a cluster admin to allow the namespace (mpiguard.io/allowed-namespaces)", rt.Name, ns, other)))
	})

	It("denies a TrainJob whose Workers have more GPUs than its runtime's max-gpus-per-worker", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := constrainedRuntime(ctx, map[string]string{constraints.AnnotationMaxGPUsPerWorker: "2"})
		Expect(env.Client.Create(ctx, withGPUs(job(rt, ns, "fits", 2), 2))).To(Succeed())

		err := env.Client.Create(ctx, withGPUs(job(rt, ns, "too-many-gpus", 2), 4))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf(
			"[runtime-constraints] spec.trainer.resourcesPerNode: TrainJob gives each Worker 4 GPUs but runtime %s allows at most 2 per Worker (mpiguard.io/max-gpus-per-worker); request 2 or fewer GPUs per node in spec.trainer.resourcesPerNode and add Workers instead", rt.Name)))
	})

	It("denies a TrainJob whose effective pods are not pinned to the runtime's required node labels", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := constrainedRuntime(ctx, map[string]string{constraints.AnnotationRequiredNodeLabels: "pool=gpu"})

		err := env.Client.Create(ctx, job(rt, ns, "unpinned", 2))
		Expect(err).To(HaveOccurred())
		for _, role := range []string{"Launcher", "Worker"} {
			Expect(err.Error()).To(ContainSubstring(fmt.Sprintf(
				"[runtime-constraints] spec.runtimePatches: the %s pods are not pinned to nodes labelled pool=gpu, which runtime %s requires (mpiguard.io/required-node-labels); add them to the pods' nodeSelector with spec.runtimePatches, or ask a cluster admin to pin the runtime's pods", role, rt.Name)))
		}

		// The same job pinned through a runtime patch: the policy sees the pods
		// as the Trainer will create them.
		tj := pinned(job(rt, ns, "pinned", 2))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		stored := &trainer.TrainJob{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), stored)).To(Succeed())
		Expect(stored.Spec.RuntimePatches).To(ContainElement(HaveField("Manager", "example.com/placement")))
	})

	It("admits TrainJobs within every limit of a runtime stating all four constraints", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := constrainedRuntime(ctx, map[string]string{
			constraints.AnnotationMaxWorkers:         "4",
			constraints.AnnotationMaxGPUsPerWorker:   "4",
			constraints.AnnotationRequiredNodeLabels: "pool=gpu",
			constraints.AnnotationAllowedNamespaces:  "other-*," + ns,
		})
		Expect(env.Client.Create(ctx, pinned(withGPUs(job(rt, ns, "at-the-limits", 4), 4)))).To(Succeed())
	})
})
