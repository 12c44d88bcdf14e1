package engine

import (
	"math"
	"math/big"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/policies/quota"
	"github.com/mpiguard/mpiguard/policies/render"
)

// TestQuotaDemandAndReservations checks the quota part of the input: the
// pod evaluator's name mapping, scopes per replicated job, undeclared
// resources, and reserved jobs summed per quota resource.
func TestQuotaDemandAndReservations(t *testing.T) {
	gpu := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n), "cpu": resource.MustParse("2"), "memory": resource.MustParse("1Gi")}
	}
	view := func(workers int32, workerClass string) *render.JobView {
		return &render.JobView{MPI: true, ReplicatedJobs: []render.ReplicatedJobView{
			{Name: "launcher", Role: render.RoleLauncher, Pods: 1, PerPod: render.Charge{Pods: 1,
				Requests: corev1.ResourceList{"cpu": resource.MustParse("500m")}, MissingLimits: []corev1.ResourceName{"memory"}}},
			{Name: "node", Role: render.RoleWorker, Pods: workers,
				PodTemplate: corev1.PodTemplateSpec{Spec: corev1.PodSpec{PriorityClassName: workerClass}},
				PerPod:      render.Charge{Pods: 1, Requests: gpu("4"), Limits: gpu("4")}},
		}}
	}
	q0 := corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "high"},
		Spec: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{
				"requests.nvidia.com/gpu": resource.MustParse("16"), "cpu": resource.MustParse("10"), "limits.memory": resource.MustParse("8Gi"),
				"pods": resource.MustParse("10"), "count/jobs.batch": resource.MustParse("5"),
			},
			ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}},
			}},
		},
		Status: corev1.ResourceQuotaStatus{Used: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("4")}},
	}
	req := &Request{
		View:   view(3, "high"),
		Quotas: []corev1.ResourceQuota{q0},
		Reserved: []Reservation{
			{TrainJob: "a/selected", Parts: quota.PartsOf(view(2, "high"), []corev1.ResourceQuota{q0})},
			{TrainJob: "a/other-class", Parts: quota.PartsOf(view(5, "low"), []corev1.ResourceQuota{q0})},
		},
	}
	got, err := ast.JSON(quotasTerm(req).Value)
	if err != nil {
		t.Fatal(err)
	}
	q := got.([]any)[0].(map[string]any)
	part := func(name, role string, pods, perPodMilli int, undeclared bool) map[string]any {
		return map[string]any{"name": name, "role": role, "pods": jsonNumber(pods), "perPodMilli": jsonNumber(perPodMilli), "undeclared": undeclared}
	}
	want := map[string]any{
		// free: hard - used - reserved (a/selected holds 2 workers' worth).
		"requests.nvidia.com/gpu": map[string]any{"kind": "requests", "resource": "nvidia.com/gpu", "milli": jsonNumber(12000), "free": jsonNumber(16000 - 4000 - 8000), "undeclared": false,
			"parts": []any{part("node", "worker", 3, 4000, false)}},
		"cpu": map[string]any{"kind": "requests", "resource": "cpu", "milli": jsonNumber(6000), "free": jsonNumber(10000 - 4000), "undeclared": false,
			"parts": []any{part("node", "worker", 3, 2000, false)}},
		"limits.memory": map[string]any{"kind": "limits", "resource": "memory", "milli": jsonNumber(3 * 1073741824000), "free": jsonNumber(6 * 1073741824000), "undeclared": false,
			"parts": []any{part("node", "worker", 3, 1073741824000, false)}},
		"pods": map[string]any{"kind": "pods", "resource": "", "milli": jsonNumber(3000), "free": jsonNumber(10000 - 2000), "undeclared": false,
			"parts": []any{part("node", "worker", 3, 1000, false)}},
	}
	if diff := cmp.Diff(want, q["demand"]); diff != "" {
		t.Errorf("demand (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"node"}, q["roles"]); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"a/selected"}, q["reservedBy"]); diff != "" {
		t.Errorf("reservedBy (-want +got):\n%s", diff)
	}
	reserved := map[string]string{}
	for name, v := range q["reserved"].(map[string]any) {
		reserved[name] = v.(map[string]any)["display"].(string)
	}
	if diff := cmp.Diff(map[string]string{"requests.nvidia.com/gpu": "8", "cpu": "4", "limits.memory": "2Gi", "pods": "2"}, reserved); diff != "" {
		t.Errorf("reserved (-want +got):\n%s", diff)
	}

	// The launcher is selected by an unscoped quota, and its undeclared
	// memory limit is flagged.
	q0.Spec.ScopeSelector = nil
	req.Quotas = []corev1.ResourceQuota{q0}
	got, err = ast.JSON(quotasTerm(req).Value)
	if err != nil {
		t.Fatal(err)
	}
	mem := got.([]any)[0].(map[string]any)["demand"].(map[string]any)["limits.memory"].(map[string]any)
	if diff := cmp.Diff([]any{part("launcher", "launcher", 1, 0, true), part("node", "worker", 3, 1073741824000, false)}, mem["parts"]); diff != "" {
		t.Errorf("limits.memory parts (-want +got):\n%s", diff)
	}
	if mem["undeclared"] != true {
		t.Errorf("limits.memory undeclared = %v, want true (the launcher's part is)", mem["undeclared"])
	}
}

func jsonNumber(n int) any {
	v, _ := ast.JSON(ast.IntNumberTerm(n).Value)
	return v
}

// demand.free is exact beyond int64: the subtraction falls back to big integers.
func TestFreeTermExact(t *testing.T) {
	q := &corev1.ResourceQuota{
		Spec:   corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.memory": resource.MustParse("1Ki")}},
		Status: corev1.ResourceQuotaStatus{Used: corev1.ResourceList{"requests.memory": *resource.NewMilliQuantity(math.MaxInt64, resource.BinarySI)}},
	}
	reserved := corev1.ResourceList{"requests.memory": *resource.NewMilliQuantity(math.MaxInt64, resource.BinarySI)}
	got := freeTerm(q, "requests.memory", reserved).String()
	want := new(big.Int).Sub(big.NewInt(1024000), new(big.Int).Mul(big.NewInt(math.MaxInt64), big.NewInt(2))).String()
	if got != want {
		t.Errorf("free = %s, want %s", got, want)
	}
	if got := freeTerm(q, "requests.cpu", nil).String(); got != "0" {
		t.Errorf("free of a resource the quota does not list = %s, want 0", got)
	}
}
