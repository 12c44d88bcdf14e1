package catalog

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/internal/render"
)

// TestResourcesPerNodeSizeTheWorkers renders a GPU TrainJob on every published
// runtime with the Trainer's own runtime framework (internal/render) and checks
// where TrainJob.spec.trainer.resourcesPerNode lands. The Trainer (v2.3) merges
// it into the ancestor-labelled job (the launcher) and, only with
// runLauncherAsNode, into the node job: a curated runtime that got this wrong
// would give the GPUs to the launcher and none to the Workers.
func TestResourcesPerNodeSizeTheWorkers(t *testing.T) {
	ctx := context.Background()
	r, err := render.NewRenderer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rts, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	gpus := resource.MustParse("4")
	perNode := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"nvidia.com/gpu": gpus, corev1.ResourceCPU: resource.MustParse("8")},
		Limits:   corev1.ResourceList{"nvidia.com/gpu": gpus},
	}

	// numNodes 3 is the launcher + 2 Workers. numProcPerNode is left unset: the
	// Trainer then takes the Slots per worker from the GPU count.
	type placement struct {
		LauncherPods, WorkerPods int32
		WorkerResources          corev1.ResourceRequirements
		LauncherResources        corev1.ResourceRequirements
		GPUsPerWorker            int64
		SlotsPerWorker           int32
		Hostfile                 []string
	}
	want := placement{
		LauncherPods: 1, WorkerPods: 2,
		WorkerResources:   perNode,
		LauncherResources: perNode,
		GPUsPerWorker:     4,
		SlotsPerWorker:    4,
		Hostfile: []string{
			"gpu-node-0-0.gpu slots=4",
			"gpu-node-0-1.gpu slots=4",
			"gpu-launcher-0-0.gpu slots=4",
		},
	}
	for _, rt := range rts {
		t.Run(rt.Name, func(t *testing.T) {
			view := renderPublished(t, r, rt, &trainer.TrainJob{
				ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "gpu"},
				Spec: trainer.TrainJobSpec{
					RuntimeRef: trainer.RuntimeRef{Name: rt.Name},
					Trainer: &trainer.Trainer{
						NumNodes:         ptr.To[int32](3),
						ResourcesPerNode: perNode.DeepCopy(),
						Args:             []string{"python", "train.py"},
					},
				},
			})
			got := placement{
				LauncherPods:      view.Launcher.Pods,
				WorkerPods:        view.Workers.Pods,
				WorkerResources:   nodeContainer(view.Workers.PodTemplate.Spec).Resources,
				LauncherResources: nodeContainer(view.Launcher.PodTemplate.Spec).Resources,
				GPUsPerWorker:     view.GPUsPerWorker,
				SlotsPerWorker:    view.SlotsPerWorker,
				Hostfile:          view.Hostfile,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("where resourcesPerNode lands (-want +got):\n%s", diff)
			}
		})
	}
}

// renderPublished renders job on rt as published (the apiserver's CRD defaults
// applied to both) with the Trainer's own runtime framework, as admission does,
// and fails unless it renders cleanly into a launcher and Workers.
func renderPublished(t *testing.T, r *render.Renderer, rt *trainer.ClusterTrainingRuntime, job *trainer.TrainJob) *render.JobView {
	t.Helper()
	published := rt.DeepCopy()
	if err := render.ApplyDefaults(job, published); err != nil {
		t.Fatal(err)
	}
	view, err := r.Render(context.Background(), render.Input{TrainJob: job, Runtime: published})
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Problems) > 0 {
		t.Fatalf("render problems: %v", view.Problems)
	}
	if view.Launcher == nil || view.Workers == nil {
		t.Fatalf("rendered without a launcher or Workers: %+v", view.ReplicatedJobs)
	}
	return view
}
