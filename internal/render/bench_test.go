package render

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// BenchmarkRender64Workers renders an MPI TrainJob with 64 workers of 8 GPUs each,
// with a namespace LimitRange, the way admission renders every submit.
// Reproduce: go test ./internal/render -run '^$' -bench BenchmarkRender64Workers -benchmem
func BenchmarkRender64Workers(b *testing.B) {
	r := renderer(b)
	rt := mpiRuntime(ancestorOn("node"),
		containerResources("node", rl("cpu=16", "memory=64Gi"), rl("memory=64Gi")),
		containerResources("launcher", rl("cpu=1", "memory=2Gi"), rl("cpu=1", "memory=2Gi")))
	tj := trainJob(numNodes(64), resourcesPerNode(nil, rl("nvidia.com/gpu=8", "cpu=32")))
	lr := limitRange("defaults", corev1.LimitRangeItem{Default: rl("ephemeral-storage=10Gi")})
	if err := ApplyDefaults(rt, tj, &lr); err != nil {
		b.Fatal(err)
	}
	fromAPIServer(rt)
	in := Input{TrainJob: tj, Runtime: rt, LimitRanges: []corev1.LimitRange{lr}}
	ctx := context.Background()
	view, err := r.Render(ctx, in)
	if err != nil {
		b.Fatal(err)
	}
	if view.Workers.Pods != 64 || len(view.Hostfile) != 64 || view.SlotsPerWorker != 8 || view.GPUsPerWorker != 8 {
		b.Fatalf("unexpected view: %d workers, %d hostfile lines, %d slots, %d GPUs",
			view.Workers.Pods, len(view.Hostfile), view.SlotsPerWorker, view.GPUsPerWorker)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRender64WorkersWithPatch is BenchmarkRender64Workers with the kind of
// runtime patch mpiguard's admission adds (node selector and pod labels on the
// Launcher and Workers): the Trainer applies it with a strategic merge patch.
// Reproduce: go test ./internal/render -run '^$' -bench BenchmarkRender64WorkersWithPatch -benchmem
func BenchmarkRender64WorkersWithPatch(b *testing.B) { benchmarkPatchedRender(b, true) }

// BenchmarkRender64WorkersOffline is BenchmarkRender64WorkersWithPatch for a
// runtime read from a file (`mpiguard check`): without a UID and a
// resourceVersion the runtime template cannot be cached, so every render
// merges the patch and converts the template as the Trainer does.
// Reproduce: go test ./internal/render -run '^$' -bench BenchmarkRender64WorkersOffline -benchmem
func BenchmarkRender64WorkersOffline(b *testing.B) { benchmarkPatchedRender(b, false) }

func benchmarkPatchedRender(b *testing.B, apiServer bool) {
	r := renderer(b)
	rt := mpiRuntime(ancestorOn("node"),
		containerResources("node", rl("cpu=16", "memory=64Gi"), rl("memory=64Gi")),
		containerResources("launcher", rl("cpu=1", "memory=2Gi"), rl("cpu=1", "memory=2Gi")))
	tj := trainJob(numNodes(64), resourcesPerNode(nil, rl("nvidia.com/gpu=8", "cpu=32")),
		nodeSelectorPatch("mpiguard.io/admission", map[string]string{"topology.kubernetes.io/region": "eu-west-1"}, "node", "launcher"))
	if err := ApplyDefaults(rt, tj); err != nil {
		b.Fatal(err)
	}
	if apiServer {
		fromAPIServer(rt)
	}
	in := Input{TrainJob: tj, Runtime: rt}
	ctx := context.Background()
	view, err := r.Render(ctx, in)
	if err != nil {
		b.Fatal(err)
	}
	if view.Workers.PodTemplate.Spec.NodeSelector["topology.kubernetes.io/region"] != "eu-west-1" {
		b.Fatal("patch not applied")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// fromAPIServer gives rt the UID and resourceVersion every object admission
// reads from the apiserver has: the renderer caches runtime templates by them.
func fromAPIServer(rt *trainer.ClusterTrainingRuntime) {
	rt.SetUID(types.UID("bench-runtime"))
	rt.SetResourceVersion("1")
}
