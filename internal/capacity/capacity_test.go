package capacity

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/internal/render"
)

func node(name string, labels map[string]string, gpus string, taints ...corev1.Taint) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	for k, v := range labels {
		n.Labels[k] = v
	}
	n.Spec.Taints = taints
	n.Status.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse(gpus),
	}
	return n
}

func replicatedJob(name string, role render.Role, pods int32, gpus string, selector map[string]string) render.ReplicatedJobView {
	rj := render.ReplicatedJobView{Name: name, Role: role, Pods: pods}
	rj.PodTemplate.Spec.NodeSelector = selector
	rj.PerPod.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	if gpus != "" {
		rj.PerPod.Requests["nvidia.com/gpu"] = resource.MustParse(gpus)
	}
	return rj
}

func job(workers int32, gpus string, selector map[string]string) *render.JobView {
	v := &render.JobView{ReplicatedJobs: []render.ReplicatedJobView{
		replicatedJob("launcher", render.RoleLauncher, 1, "", nil),
		replicatedJob("node", render.RoleWorker, workers, gpus, selector),
	}}
	v.Launcher, v.Workers = &v.ReplicatedJobs[0], &v.ReplicatedJobs[1]
	return v
}

// cluster is 4 GPU nodes of 8 GPUs (pool gpu) and 4 without (pool cpu).
func cluster() []corev1.Node {
	var nodes []corev1.Node
	for i := range 4 {
		nodes = append(nodes, node(fmt.Sprintf("gpu-%d", i), map[string]string{"pool": "gpu"}, "8"))
		nodes = append(nodes, node(fmt.Sprintf("cpu-%d", i), map[string]string{"pool": "cpu"}, "0"))
	}
	return nodes
}

func TestNodesAreSummarizedByShapeNotByName(t *testing.T) {
	s := Summarize(cluster())
	if s.Nodes != 8 || len(s.Shapes) != 2 {
		t.Fatalf("Summarize: %d nodes in %d shapes, want 8 in 2", s.Nodes, len(s.Shapes))
	}
}

func TestWorkerLargerThanEveryEligibleNode(t *testing.T) {
	got := Of(job(2, "16", map[string]string{"pool": "gpu"}), Summarize(cluster()), nil)
	w := got.ReplicatedJobs[1]
	want := []Shortfall{{Resource: "nvidia.com/gpu", Asks: "16", Largest: "8"}}
	if w.EligibleNodes != 4 || w.FittingNodes != 0 || w.Excluded.Selector != 4 {
		t.Errorf("Worker: eligible %d, fitting %d, excluded by selector %d; want 4, 0, 4", w.EligibleNodes, w.FittingNodes, w.Excluded.Selector)
	}
	if diff := cmp.Diff(want, w.Short); diff != "" {
		t.Errorf("Short (-want +got):\n%s", diff)
	}
}

func TestGangCapacityBesideTheLauncher(t *testing.T) {
	for _, tc := range []struct {
		name     string
		selector map[string]string
		gpus     string
		want     int64
	}{
		// One 8-GPU Worker per GPU node; the Launcher goes to a CPU node.
		{"launcher elsewhere", map[string]string{"pool": "gpu"}, "8", 4},
		// Two 4-GPU Workers per GPU node.
		{"two per node", map[string]string{"pool": "gpu"}, "4", 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Of(job(6, tc.gpus, tc.selector), Summarize(cluster()), nil)
			if got.Gang.Capacity != tc.want {
				t.Errorf("Gang.Capacity = %d, want %d", got.Gang.Capacity, tc.want)
			}
		})
	}
	// The Launcher may only go to GPU nodes (one shape): it costs a Worker
	// slot there when it leaves too little room beside a Worker.
	nodes := []corev1.Node{node("a", nil, "8"), node("b", nil, "8")}
	for i := range nodes {
		nodes[i].Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("1")
	}
	got := Of(job(2, "8", nil), Summarize(nodes), nil)
	if got.Gang.Capacity != 1 {
		t.Errorf("Gang.Capacity with the Launcher taking a node's only CPU = %d, want 1", got.Gang.Capacity)
	}
}

func TestTaintsCordonsAndRuntimeClassScheduling(t *testing.T) {
	taint := corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	nodes := []corev1.Node{node("t", nil, "8", taint), node("u", nil, "8"), node("ok", nil, "8")}
	nodes[1].Spec.Unschedulable = true
	v := job(1, "8", nil)
	got := Of(v, Summarize(nodes), nil).ReplicatedJobs[1]
	if got.EligibleNodes != 1 || got.Excluded.Taints != 1 || got.Excluded.Unschedulable != 1 {
		t.Errorf("without toleration: %+v", got)
	}
	// A RuntimeClass whose scheduling tolerates the taint (merged as the
	// RuntimeClass admission plugin merges it).
	rc := nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Handler: "nvidia",
		Scheduling: &nodev1.Scheduling{Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}}}
	name := "gpu"
	v.Workers.PodTemplate.Spec.RuntimeClassName = &name
	got = Of(v, Summarize(nodes), []nodev1.RuntimeClass{rc}).ReplicatedJobs[1]
	if got.EligibleNodes != 2 || got.Excluded.Taints != 0 {
		t.Errorf("with the RuntimeClass's toleration: %+v", got)
	}
}

func TestHostnameSelectorMatchesEachNode(t *testing.T) {
	got := Of(job(1, "8", map[string]string{corev1.LabelHostname: "gpu-2"}), Summarize(cluster()), nil).ReplicatedJobs[1]
	if got.EligibleNodes != 1 || got.FittingNodes != 1 {
		t.Errorf("hostname selector: eligible %d fitting %d, want 1 and 1", got.EligibleNodes, got.FittingNodes)
	}
}

func TestIndexFollowsChanges(t *testing.T) {
	ix := NewIndex()
	if ix.Summary() != nil {
		t.Fatal("an empty index must say no nodes are known (nil)")
	}
	nodes := cluster()
	for i := range nodes {
		ix.Set(&nodes[i])
	}
	first := ix.Summary()
	nodes[0].Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady}}
	ix.Set(&nodes[0])
	if ix.Summary() != first {
		t.Error("a status change that no shape reads made a new summary")
	}
	nodes[0].Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("16")
	ix.Set(&nodes[0])
	if s := ix.Summary(); s == first || len(s.Shapes) != 3 || s.Nodes != 8 {
		t.Errorf("after a node's allocatable changed: %d nodes in %d shapes, want 8 in 3", s.Nodes, len(s.Shapes))
	}
	ix.Delete(nodes[0].Name)
	if s := ix.Summary(); len(s.Shapes) != 2 || s.Nodes != 7 {
		t.Errorf("after a delete: %d nodes in %d shapes, want 7 in 2", s.Nodes, len(s.Shapes))
	}
}
