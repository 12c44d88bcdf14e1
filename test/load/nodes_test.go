package load

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// nodeGroup is one group of a cluster's nodes: its instance type and what
// each node of it has allocatable.
type nodeGroup struct {
	name, instanceType, gpuProduct string
	cpu, memory                    string
	gpus                           int
}

// benchmarkNodeGroups are the shapes of the Nodes createNodes makes: GPU
// groups of 8 and 4 GPUs and a CPU group, as a training cluster's node pools.
// The largest node has 8 GPUs.
var benchmarkNodeGroups = []nodeGroup{
	{name: "a100", instanceType: "p4d.24xlarge", gpuProduct: "NVIDIA-A100-SXM4-40GB", cpu: "95", memory: "1100Gi", gpus: 8},
	{name: "h100", instanceType: "p5.48xlarge", gpuProduct: "NVIDIA-H100-80GB-HBM3", cpu: "191", memory: "1950Gi", gpus: 8},
	{name: "l4", instanceType: "g6.12xlarge", gpuProduct: "NVIDIA-L4", cpu: "47", memory: "180Gi", gpus: 4},
	{name: "cpu", instanceType: "m6i.16xlarge", cpu: "63", memory: "245Gi"},
}

// benchmarkZones are the zones the Nodes are spread over.
var benchmarkZones = []string{"zone-a", "zone-b", "zone-c"}

// nodeGroupLabel names a Node's node group.
const nodeGroupLabel = "mpiguard.io/benchmark-node-group"

// benchmarkNode is Node i of createNodes: its group and zone in turn, with
// the labels, allocatable, capacity, conditions and node info a kubelet and
// GPU feature discovery would report.
func benchmarkNode(i int) *corev1.Node {
	g, zone := benchmarkNodeGroups[i%len(benchmarkNodeGroups)], benchmarkZones[(i/len(benchmarkNodeGroups))%len(benchmarkZones)]
	labels := map[string]string{
		corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		corev1.LabelInstanceTypeStable: g.instanceType, corev1.LabelTopologyZone: zone, corev1.LabelTopologyRegion: "region-1",
		nodeGroupLabel: g.name,
	}
	allocatable := fixtures.ResourceList("cpu", g.cpu, "memory", g.memory, "ephemeral-storage", "900Gi")
	if g.gpus > 0 {
		labels["nvidia.com/gpu.product"], labels["nvidia.com/gpu.count"] = g.gpuProduct, fmt.Sprint(g.gpus)
		allocatable["nvidia.com/gpu"] = *resource.NewQuantity(int64(g.gpus), resource.DecimalSI)
	}
	n := framework.NodeOf(fmt.Sprintf("node-%s-%05d", g.name, i), labels, allocatable)
	n.Status.Capacity = n.Status.Allocatable.DeepCopy()
	cpu := resource.MustParse(g.cpu)
	cpu.Add(resource.MustParse("1")) // the kubelet's reserve
	n.Status.Capacity[corev1.ResourceCPU] = cpu
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.33.0", OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.0.0"}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)}}
	return n
}

// createNodes creates n Nodes (benchmarkNode) as API objects, each with its
// status written through the status subresource (no kubelet runs), and
// returns once mpiguard sees every one of them: every running replica's
// Node cache (the informer its node-capacity index is kept from) lists n
// Nodes, and a Worker larger than every node is denied by node-capacity
// naming n cluster nodes (probe: a namespace the webhooks select, runtime
// gpuRuntime's name).
func createNodes(ctx context.Context, b *testing.B, env *framework.Env, n int, probe client.Client, namespace, runtime string) {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1 // no client-side rate limit
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	must(b, err)
	start := time.Now()
	var (
		wg     sync.WaitGroup
		next   = make(chan int)
		failed = make(chan error, 1)
	)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				node := benchmarkNode(i)
				status := node.Status
				err := c.Create(ctx, node)
				if err == nil {
					node.Status = status
					err = c.Status().Update(ctx, node)
				}
				if err != nil {
					select {
					case failed <- fmt.Errorf("node %d: %w", i, err):
					default:
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-failed:
		b.Fatalf("creating Nodes: %v", err)
	default:
	}
	b.Logf("%d Nodes created in %v", n, time.Since(start).Round(time.Millisecond))

	for i, r := range env.Replicas {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var list corev1.NodeList
			must(b, r.Manager.GetClient().List(ctx, &list))
			if len(list.Items) == n {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("replica %d's Node cache lists %d Nodes, want %d", i, len(list.Items), n)
			}
			time.Sleep(time.Second)
		}
	}
	// A Worker asking twice the GPUs of the largest node: node-capacity
	// names how many nodes it was judged against.
	job := fixtures.TrainJob(namespace, "nodes-probe", runtime).NumNodes(1).Requests("nvidia.com/gpu", "16").Limits("nvidia.com/gpu", "16").Obj()
	err = probe.Create(ctx, job, client.DryRunAll)
	want := fmt.Sprintf("the largest of the %d cluster nodes it may run on has 8 nvidia.com/gpu", n)
	if err == nil || !strings.Contains(err.Error(), "[node-capacity]") || !strings.Contains(err.Error(), want) {
		b.Fatalf("a Worker of 16 GPUs with %d Nodes of at most 8: want a node-capacity denial saying %q, got %v", n, want, err)
	}
	b.Logf("mpiguard judges against the %d Nodes: %v", n, err)
}
