package input

import (
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
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
	req := &Source{
		View:   view(3, "high"),
		Quotas: []corev1.ResourceQuota{q0},
		Reservations: []quota.Reservation{
			{TrainJob: "a/selected", Parts: quota.PartsOf(view(2, "high"))},
			{TrainJob: "a/other-class", Parts: quota.PartsOf(view(5, "low"))},
		},
		// Of the 4 GPUs used, 2 are pods the quota's controller had not counted.
		Uncounted: Uncounted{"high": {"requests.nvidia.com/gpu": resource.MustParse("2")}},
	}
	q := quotasDoc(t, req)[0].(map[string]any)
	part := func(name, role string, pods, perPodMilli int, display string, undeclared bool) map[string]any {
		return map[string]any{"name": name, "role": role, "pods": jsonNumber(pods), "perPodMilli": jsonNumber(perPodMilli), "perPodDisplay": display, "undeclared": undeclared}
	}
	// entry is a demand entry; a/selected holds 2 workers' worth of every resource.
	entry := func(kind, res string, milli int, display string, hard int, hardDisplay string, used int, usedDisplay string, held int, heldDisplay string, parts ...any) map[string]any {
		return map[string]any{
			"kind": kind, "resource": res, "milli": jsonNumber(milli), "display": display,
			"hard": jsonNumber(hard), "hardDisplay": hardDisplay, "used": jsonNumber(used), "usedDisplay": usedDisplay,
			"uncounted": jsonNumber(0), "uncountedDisplay": "0",
			"held": jsonNumber(held), "heldDisplay": heldDisplay,
			"heldBy":     []any{map[string]any{"trainJob": "a/selected", "milli": jsonNumber(held), "display": heldDisplay}},
			"undeclared": false, "parts": parts,
		}
	}
	const gi = 1073741824000
	want := map[string]any{
		"requests.nvidia.com/gpu": entry("requests", "nvidia.com/gpu", 12000, "12", 16000, "16", 4000, "4", 8000, "8",
			part("node", "worker", 3, 4000, "4", false)),
		"cpu": entry("requests", "cpu", 6000, "6", 10000, "10", 0, "0", 4000, "4",
			part("node", "worker", 3, 2000, "2", false)),
		"limits.memory": entry("limits", "memory", 3*gi, "3Gi", 8*gi, "8Gi", 0, "0", 2*gi, "2Gi",
			part("node", "worker", 3, gi, "1Gi", false)),
		"pods": entry("pods", "", 3000, "3", 10000, "10", 0, "0", 2000, "2",
			part("node", "worker", 3, 1000, "1", false)),
	}
	want["requests.nvidia.com/gpu"].(map[string]any)["uncounted"] = jsonNumber(2000)
	want["requests.nvidia.com/gpu"].(map[string]any)["uncountedDisplay"] = "2"
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
	mem := quotasDoc(t, req)[0].(map[string]any)["demand"].(map[string]any)["limits.memory"].(map[string]any)
	if diff := cmp.Diff([]any{part("launcher", "launcher", 1, 0, "0", true), part("node", "worker", 3, gi, "1Gi", false)}, mem["parts"]); diff != "" {
		t.Errorf("limits.memory parts (-want +got):\n%s", diff)
	}
	if mem["undeclared"] != true {
		t.Errorf("limits.memory undeclared = %v, want true (the launcher's part is)", mem["undeclared"])
	}
}

// quotasDoc is input.quotas of src as policies see it.
func quotasDoc(t *testing.T, src *Source) []any {
	t.Helper()
	v, err := ast.InterfaceToValue(quotasOf(src, NewQuotaState(src.Quotas, src.Reservations, src.Uncounted)))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ast.JSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return doc.([]any)
}

func jsonNumber(n int) any {
	v, _ := ast.JSON(ast.IntNumberTerm(n).Value)
	return v
}

// The quota amounts of input.quotas[].demand are exact past int64: hard,
// used and held of quantities whose MilliValue arithmetic would wrap around
// reach Rego as the exact integers (the policy subtracts them).
func TestDemandAmountsExact(t *testing.T) {
	q := corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.memory": resource.MustParse("1Ki")}},
		Status:     corev1.ResourceQuotaStatus{Used: corev1.ResourceList{"requests.memory": *resource.NewMilliQuantity(math.MaxInt64, resource.BinarySI)}},
	}
	held := &render.JobView{ReplicatedJobs: []render.ReplicatedJobView{{
		Name: "node", Pods: 2, PerPod: render.Charge{Pods: 1, Requests: corev1.ResourceList{"memory": resource.MustParse("8Pi")}},
	}}}
	req := mpiSource("team-a", 2)
	req.View.ReplicatedJobs[1].PerPod = render.Charge{Pods: 1, Requests: corev1.ResourceList{"memory": resource.MustParse("8Pi")}}
	req.Quotas = []corev1.ResourceQuota{q}
	req.Reservations = []quota.Reservation{{TrainJob: "a/held", Parts: quota.PartsOf(held)}}
	d := quotasDoc(t, req)[0].(map[string]any)["demand"].(map[string]any)["requests.memory"].(map[string]any)
	eightPiMilli := new(big.Int).Mul(big.NewInt(9007199254740992), big.NewInt(1000))
	want := map[string]any{
		"hard":  mustJSON(t, "1024000"),
		"used":  mustJSON(t, fmt.Sprint(int64(math.MaxInt64))),
		"held":  mustJSON(t, new(big.Int).Mul(eightPiMilli, big.NewInt(2)).String()),
		"milli": mustJSON(t, new(big.Int).Mul(eightPiMilli, big.NewInt(2)).String()),
	}
	for k, w := range want {
		if diff := cmp.Diff(w, d[k]); diff != "" {
			t.Errorf("demand.%s (-want +got):\n%s", k, diff)
		}
	}
}

// The input's quantities are exact past int64: quantities whose int64 milli
// amounts collide (MilliValue wraps around modulo 2^64) stay apart.
func TestQuantitiesPastInt64(t *testing.T) {
	sixteenPi := resource.MustParse("16Pi")
	// 16Pi + 2^64 milli: the same MilliValue and format as 16Pi.
	wrapped := resource.MustParse("36461142583191535616m")
	wrapped.Format = resource.BinarySI
	if sixteenPi.MilliValue() != wrapped.MilliValue() {
		t.Fatalf("the amounts do not collide as int64 milli: %d, %d", sixteenPi.MilliValue(), wrapped.MilliValue())
	}
	for _, q := range []resource.Quantity{sixteenPi, wrapped} {
		req := mpiSource("team-a", 2)
		req.View.ReplicatedJobs[1].PerPod = render.Charge{Requests: corev1.ResourceList{"memory": q}}
		got := inputDoc(t, req, nil)["job"].(map[string]any)["replicatedJobs"].([]any)[1].(map[string]any)["perPod"].(map[string]any)["requests"]
		want := map[string]any{"memory": map[string]any{
			"milli":   mustJSON(t, quota.Milli(q).String()),
			"value":   mustJSON(t, string(units(quota.Milli(q)))),
			"display": q.String(),
		}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", q.String(), diff)
		}
	}
	if got := quantityOf(sixteenPi).Value; got != "18014398509481984" {
		t.Errorf("16Pi value = %s, want 18014398509481984", got)
	}
}

func TestUnits(t *testing.T) {
	for milli, want := range map[string]string{
		"0": "0", "4000": "4", "1500": "1.5", "1": "0.001", "-1500": "-1.5", "-500": "-0.5", "10": "0.01",
		"18014398509481984000":                  "18014398509481984",
		"36461142583191535616":                  "36461142583191535.616",
		"1000000000000000000000000000000000001": "1000000000000000000000000000000000.001",
	} {
		m, _ := new(big.Int).SetString(milli, 10)
		if got := units(m); string(got) != want {
			t.Errorf("units(%s) = %s, want %s", milli, got, want)
		}
	}
}

// Against judges the same job against another quota state: its document
// is the one New builds with those quotas and holders, and the document it
// started from is left as it was (a replica's retry must not change the
// decision it retries).
func TestAgainstIsNewWithThoseQuotas(t *testing.T) {
	src := mpiSource("team-a", 2)
	src.View.ReplicatedJobs[1].PerPod = renderCharge("2")
	// Two Jobs, which input.job.objects compares with the quota's count.
	src.View.Objects = []render.Objects{{
		GVK: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, Resource: "jobs",
		Creator: render.CreatorJobSet, Count: 2, Names: []string{"run-launcher-0", "run-node-0"},
	}}
	q := func(hard string) []corev1.ResourceQuota {
		return []corev1.ResourceQuota{{
			ObjectMeta: metav1.ObjectMeta{Name: "cpu"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
				"requests.cpu": resource.MustParse(hard), "count/jobs.batch": resource.MustParse(hard),
			}},
		}}
	}
	src.Quotas = q("4")
	before, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	holders := []quota.Reservation{{TrainJob: "team-a/other", Parts: quota.PartsOf(src.View)}}
	other := *src
	other.Quotas, other.Reservations = q("16"), holders
	want, err := New(&other)
	if err != nil {
		t.Fatal(err)
	}
	beforeValue := before.Value(nil, nil)
	shared := NewQuotaState(other.Quotas, holders, nil)
	again, err := before.Against(shared)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Value(nil, nil); got.Compare(want.Value(nil, nil)) != 0 {
		t.Errorf("Against:\n got %s\nwant %s", got, want.Value(nil, nil))
	}
	if got := before.Value(nil, nil); got.Compare(beforeValue) != 0 {
		t.Errorf("Against changed the document it started from:\n got %s\nwant %s", got, beforeValue)
	}
	// The same holdings serve another job (a round judges all its requests
	// against one): nothing of the first job stays in them.
	bigger := mpiSource("team-a", 4)
	bigger.Quotas = q("4")
	first, err := New(bigger)
	if err != nil {
		t.Fatal(err)
	}
	bigger.Quotas, bigger.Reservations = other.Quotas, holders
	wantBigger, err := New(bigger)
	if err != nil {
		t.Fatal(err)
	}
	gotBigger, err := first.Against(shared)
	if err != nil {
		t.Fatal(err)
	}
	if got := gotBigger.Value(nil, nil); got.Compare(wantBigger.Value(nil, nil)) != 0 {
		t.Errorf("Against shared with another job:\n got %s\nwant %s", got, wantBigger.Value(nil, nil))
	}
}
