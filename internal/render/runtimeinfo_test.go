package render

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
)

// TestRuntimeInfoMatchesTheTrainer builds every TestRender input twice: with
// the Trainer's own RuntimeInfo, and with the renderer's copy of it that takes
// the merged template from the cache. The objects the Trainer's component
// builders then make (JobSet, hostfile ConfigMap, ...) must be the same, byte
// for byte, without the cache and on cache hits after another job's render.
func TestRuntimeInfoMatchesTheTrainer(t *testing.T) {
	cases := renderCases()
	// More patch shapes: a patch on a runtime whose launcher is a node, with
	// resourcesPerNode merged into both the launcher and the workers.
	cases["launcher as node, resourcesPerNode and two patches"] = renderCase{
		runtime: mpiRuntime(launcherAsNode(true), containerResources("node", rl("cpu=4", "memory=8Gi"), rl("memory=8Gi"))),
		trainJob: trainJob(numNodes(4), resourcesPerNode(rl("nvidia.com/gpu=2"), rl("nvidia.com/gpu=2")),
			nodeSelectorPatch("mpiguard.io/admission", map[string]string{"topology.kubernetes.io/region": "eu-west-1"}, "node", "launcher"),
			nodeSelectorPatch("kueue.x-k8s.io/manager", map[string]string{"pool": "a100"}, "node")),
	}
	r := renderer(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := ApplyDefaults(tc.runtime, tc.trainJob); err != nil {
				t.Fatalf("ApplyDefaults: %v", err)
			}
			want := trainerObjects(t, r, tc.trainJob, tc.runtime)

			if got := renderedObjects(t, r, "", tc.trainJob, tc.runtime); got != want {
				t.Errorf("without the cache (-Trainer +mpiguard):\n%s", cmp.Diff(want, got))
			}
			cached := tc.runtime.DeepCopyObject().(client.Object)
			cached.SetUID(types.UID("uid-" + name))
			cached.SetResourceVersion("7")
			key := runtimeCacheKey(cached.GetObjectKind().GroupVersionKind().Kind, cached)
			if key == "" {
				t.Fatal("a runtime with a UID and a resourceVersion has no cache key")
			}
			// A different job on the same runtime and patches renders first (the
			// cache miss): whatever the Trainer's plugins do to its copy must not
			// reach the next render through the cache.
			other := tc.trainJob.DeepCopy()
			other.Name = "other"
			if other.Spec.Trainer == nil {
				other.Spec.Trainer = &trainer.Trainer{}
			}
			other.Spec.Trainer.NumNodes = ptr.To[int32](7)
			other.Spec.Trainer.NumProcPerNode = ptr.To[int32](3)
			other.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{Requests: rl("cpu=3", "example.com/fpga=1"), Limits: rl("example.com/fpga=1")}
			renderedObjects(t, r, key, other, cached)
			for i := range 3 { // hits: no render may change the cached template
				if got := renderedObjects(t, r, key, tc.trainJob, cached); got != want {
					t.Errorf("render %d with the cache (-Trainer +mpiguard):\n%s", i+1, cmp.Diff(want, got))
				}
			}
		})
	}
}

// trainerObjects builds the objects with the Trainer's own RuntimeInfo.
func trainerObjects(t *testing.T, r *Renderer, tj *trainer.TrainJob, rt client.Object) string {
	t.Helper()
	trainJob, runtimeObj, spec, err := prepareInput(Input{TrainJob: tj, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	info, err := r.runtimes[trainerruntime.RuntimeRefToRuntimeRegistryKey(trainJob.Spec.RuntimeRef)].
		RuntimeInfo(trainJob, spec.Template, spec.MLPolicy, spec.PodGroupPolicy)
	if err != nil {
		t.Fatalf("Trainer RuntimeInfo: %v", err)
	}
	return builtObjects(t, r, info, trainJob, runtimeObj)
}

// renderedObjects builds the objects with the renderer's runtimeInfo.
func renderedObjects(t *testing.T, r *Renderer, key string, tj *trainer.TrainJob, rt client.Object) string {
	t.Helper()
	trainJob, runtimeObj, spec, err := prepareInput(Input{TrainJob: tj, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	info, err := r.runtimeInfo(key, trainJob, spec)
	if err != nil {
		t.Fatalf("runtimeInfo: %v", err)
	}
	return builtObjects(t, r, info, trainJob, runtimeObj)
}

func builtObjects(t *testing.T, r *Renderer, info *trainerruntime.Info, trainJob *trainer.TrainJob, runtimeObj client.Object) string {
	t.Helper()
	objects, err := r.framework.RunComponentBuilderPlugins(withRenderRequest(context.Background(), &renderRequest{runtime: runtimeObj}), info, trainJob)
	if err != nil {
		t.Fatalf("RunComponentBuilderPlugins: %v", err)
	}
	data, err := json.MarshalIndent(objects, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if len(objects) == 0 {
		t.Fatal("no objects built")
	}
	return fmt.Sprintf("%d objects\n%s", len(objects), data)
}
