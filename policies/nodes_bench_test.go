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
// 64-worker job with no Nodes known, with 12 Nodes (one of each shape) and
// with 5,000 Nodes of the same 12 shapes: four node groups (8 A100 GPUs,
// 8 H100 GPUs, 4 L4 GPUs, CPU only) in three zones, each Node with the labels
// a kubelet and GPU feature discovery set (as test/load's Nodes), its own
// name and hostname. The Nodes are summarized by shape once, as the webhooks'
// informer index does; a decision reads the summary.
func BenchmarkDecisionNodes(b *testing.B) {
	env := newBenchEnv(b)
	ctx := context.Background()
	admitted, err := env.admission(ctx, env.cluster.TrainJobs[0].TrainJob, pipeline.Admit)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{0, 12, 5000} {
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
	groups := []struct {
		name, instanceType, gpuProduct, cpu, memory string
		gpus                                        int
	}{
		{"a100", "p4d.24xlarge", "NVIDIA-A100-SXM4-40GB", "95", "1100Gi", 8},
		{"h100", "p5.48xlarge", "NVIDIA-H100-80GB-HBM3", "191", "1950Gi", 8},
		{"l4", "g6.12xlarge", "NVIDIA-L4", "47", "180Gi", 4},
		{"cpu", "m6i.16xlarge", "", "63", "245Gi", 0},
	}
	zones := []string{"zone-a", "zone-b", "zone-c"}
	nodes := make([]corev1.Node, n)
	for i := range nodes {
		g, zone := groups[i%len(groups)], zones[(i/len(groups))%len(zones)]
		name := fmt.Sprintf("node-%s-%05d", g.name, i)
		labels := map[string]string{
			corev1.LabelHostname: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
			corev1.LabelInstanceTypeStable: g.instanceType, corev1.LabelTopologyZone: zone,
			corev1.LabelTopologyRegion: "eu-west-1", "pool": g.name,
		}
		allocatable := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(g.cpu), corev1.ResourceMemory: resource.MustParse(g.memory),
			corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("900Gi"),
		}
		if g.gpus > 0 {
			labels["nvidia.com/gpu.product"], labels["nvidia.com/gpu.count"] = g.gpuProduct, fmt.Sprint(g.gpus)
			allocatable["nvidia.com/gpu"] = *resource.NewQuantity(int64(g.gpus), resource.DecimalSI)
		}
		nodes[i] = corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		nodes[i].Status.Allocatable = allocatable
	}
	return nodes
}
