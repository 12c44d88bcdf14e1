package policies_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/internal/check"
	"github.com/mpiguard/mpiguard/internal/pipeline"
)

// BenchmarkDecisionNodes is the validating decision on the mutated
// 64-worker job with no Nodes known, with 5 Nodes (one per node group) and
// with 5,000 Nodes in the same 5 node groups
// (each Node its own name and hostname, in the job's residency region). The Nodes are summarized by shape
// once, as the webhooks' informer index does; a decision reads the summary.
func BenchmarkDecisionNodes(b *testing.B) {
	env := newBenchEnv(b)
	ctx := context.Background()
	admitted, err := env.admission(ctx, env.cluster.TrainJobs[0].TrainJob, pipeline.Admit)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{0, 5, 5000} {
		b.Run(fmt.Sprintf("nodes-%d", n), func(b *testing.B) {
			env.cluster.Nodes = benchNodes(n)
			reader := check.NewReader(env.cluster)
			req := &pipeline.Request{Operation: "CREATE", User: "bench", TrainJob: admitted.TrainJob}
			v, err := env.pipe.Run(ctx, reader, req, pipeline.Validate)
			if err != nil || !v.Allowed() {
				b.Fatalf("not allowed with %d nodes: %v %s", n, err, v.DenialMessage())
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := env.pipe.Run(ctx, reader, req, pipeline.Validate); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	env.cluster.Nodes = nil
}

func benchNodes(n int) []corev1.Node {
	nodes := make([]corev1.Node, n)
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		nodes[i] = corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelHostname: name, "pool": fmt.Sprintf("pool-%d", i%5), corev1.LabelTopologyZone: "zone-a", corev1.LabelTopologyRegion: "eu-west-1",
		}}}
		nodes[i].Status.Allocatable = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("128"), corev1.ResourceMemory: resource.MustParse("1Ti"),
			corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("8"),
		}
	}
	return nodes
}
