package quota

import (
	"math"
	"math/big"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func bigInt(t *testing.T, s string) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad integer %q", s)
	}
	return n
}

// pow2 is 2^n × k.
func pow2(n uint, k int64) *big.Int { return new(big.Int).Lsh(big.NewInt(k), n) }

func milli(n *big.Int) *big.Int { return new(big.Int).Mul(n, big.NewInt(1000)) }

// Milli is exact on both sides of the int64 boundary of milli units
// (9223372036854775807m, about 9.2e15 units), where MilliValue wraps around.
func TestMilliAtTheInt64Boundary(t *testing.T) {
	cases := []struct {
		q    resource.Quantity
		want *big.Int
	}{
		{resource.MustParse("0"), big.NewInt(0)},
		{resource.MustParse("1500m"), big.NewInt(1500)},
		{resource.MustParse("1u"), big.NewInt(1)},                                    // rounded up, as MilliValue rounds
		{resource.MustParse("-1u"), big.NewInt(-1)},                                  // away from zero, as MilliValue rounds
		{resource.MustParse("9223372036854775"), bigInt(t, "9223372036854775000")},   // the largest whole amount MilliValue holds
		{resource.MustParse("9223372036854776"), bigInt(t, "9223372036854776000")},   // one past it
		{resource.MustParse("-9223372036854776"), bigInt(t, "-9223372036854776000")}, // and below
		{*resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI), big.NewInt(math.MaxInt64)},
		{resource.MustParse("9223372036854775807"), bigInt(t, "9223372036854775807000")},
		{resource.MustParse("8Pi"), milli(pow2(53, 1))},  // 9.007e18 milli: still an int64
		{resource.MustParse("16Pi"), milli(pow2(54, 1))}, // 1.8e19 milli: MilliValue is negative
		{resource.MustParse("1Ei"), milli(pow2(60, 1))},
		{resource.MustParse("1e30"), bigInt(t, "1000000000000000000000000000000000")},
		// Past the bound, rounded as MilliValue rounds below it.
		{resource.MustParse("9223372036854775.0001"), bigInt(t, "9223372036854775001")},
		{resource.MustParse("-9223372036854776.0001"), bigInt(t, "-9223372036854776001")},
	}
	for _, tc := range cases {
		if got := Milli(tc.q); got.Cmp(tc.want) != 0 {
			t.Errorf("Milli(%s) = %s, want %s", tc.q.String(), got, tc.want)
		}
	}
}

// MilliInt64 holds only the amounts an int64 of milli units holds exactly.
func TestMilliInt64(t *testing.T) {
	cases := []struct {
		q      string
		want   int64
		wantOK bool
	}{
		{"1500m", 1500, true},
		{"4Ti", 4398046511104000, true},
		{"8Pi", 9007199254740992000, true},
		{"9223372036854775", 9223372036854775000, true},
		{"9223372036854776", 0, false}, // MilliValue would wrap around
		{"16Pi", 0, false},
		{"1u", 0, false}, // MilliValue would round it up to 1m
		{"1500001u", 0, false},
	}
	for _, tc := range cases {
		got, ok := MilliInt64(resource.MustParse(tc.q))
		if ok != tc.wantOK || (ok && got != tc.want) {
			t.Errorf("MilliInt64(%s) = %d, %v; want %d, %v", tc.q, got, ok, tc.want, tc.wantOK)
		}
	}
}

// Times is exact where an int64 product of pods and a per-pod amount wraps:
// thousands of pods × terabytes, petabytes and exabytes.
func TestTimesPastInt64(t *testing.T) {
	cases := []struct {
		per  string
		n    int64
		want *big.Int // milli
	}{
		{"4", 3, big.NewInt(12000)},
		{"4Ti", 5000, milli(pow2(40, 4*5000))}, // 2.2e19 milli
		{"8Pi", 2, milli(pow2(50, 16))},
		{"1Pi", 5000, milli(pow2(50, 5000))},
		{"1Ei", 5000, milli(pow2(60, 5000))},
		{"1500m", 1 << 62, new(big.Int).Mul(big.NewInt(1500), pow2(62, 1))},
	}
	for _, tc := range cases {
		got := Times(resource.MustParse(tc.per), tc.n)
		if m := Milli(got); m.Cmp(tc.want) != 0 {
			t.Errorf("Times(%s, %d) = %s milli, want %s", tc.per, tc.n, m, tc.want)
		}
	}
	// Times copies: the per-pod amount is left alone.
	per := resource.MustParse("1Ei")
	Times(per, 5000)
	if per.String() != "1Ei" {
		t.Errorf("Times changed its argument to %s", per.String())
	}
}

func memoryQuota(hard, used string) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.memory": resource.MustParse(hard)}},
	}
	if used != "" {
		q.Status.Used = corev1.ResourceList{"requests.memory": resource.MustParse(used)}
	}
	return q
}

// holder holds pods that each request per of memory.
func holder(name string, pods int32, per string) Reservation {
	return Reservation{TrainJob: name, Parts: []Part{{
		ReplicatedJob: "node", Pods: pods,
		PerPod: corev1.ResourceList{"requests.memory": resource.MustParse(per), "memory": resource.MustParse(per), "pods": resource.MustParse("1")},
	}}}
}

// Reserved sums holders exactly past int64 and orders them largest first;
// Free subtracts exactly and goes negative when the quota is over-committed.
func TestReservedAndFreePastInt64(t *testing.T) {
	q := memoryQuota("1Pi", "1Ti")
	holders := []Reservation{
		holder("team-a/small", 1, "1Gi"),
		holder("team-a/huge", 5000, "1Ei"),
		holder("team-a/large", 2, "8Pi"),
	}
	held := ReservedOf(q, holders)["requests.memory"]
	if held == nil {
		t.Fatal("nothing held of requests.memory")
	}
	type by struct{ Job, Milli string }
	var got []by
	for _, h := range held.By {
		got = append(got, by{h.TrainJob, Milli(h.Amount).String()})
	}
	want := []by{
		{"team-a/huge", milli(pow2(60, 5000)).String()},
		{"team-a/large", milli(pow2(50, 16)).String()},
		{"team-a/small", milli(pow2(30, 1)).String()},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("held by (-want +got):\n%s", diff)
	}
	total := new(big.Int).Add(pow2(60, 5000), pow2(50, 16))
	total.Add(total, pow2(30, 1))
	if m := Milli(held.Total); m.Cmp(milli(total)) != 0 {
		t.Errorf("held total = %s milli, want %s", m, milli(total))
	}
	free := new(big.Int).Sub(pow2(50, 1), pow2(40, 1))
	free.Sub(free, total)
	if m := Milli(Free(q, "requests.memory", held)); m.Cmp(milli(free)) != 0 {
		t.Errorf("free = %s milli, want %s (negative: over-committed)", m, milli(free))
	}
}

// Free is hard - used without holders, 0 for a name the quota does not list,
// and exact where MilliValue arithmetic would wrap.
func TestFree(t *testing.T) {
	cases := []struct {
		q    *corev1.ResourceQuota
		name corev1.ResourceName
		want *big.Int
	}{
		{memoryQuota("48Gi", "16Gi"), "requests.memory", milli(pow2(30, 32))},
		{memoryQuota("48Gi", ""), "requests.memory", milli(pow2(30, 48))},
		{memoryQuota("48Gi", ""), "requests.cpu", big.NewInt(0)},
		{memoryQuota("16Pi", "1"), "requests.memory", new(big.Int).Sub(milli(pow2(50, 16)), big.NewInt(1000))},
		{memoryQuota("1Ki", "9223372036854775807"), "requests.memory", new(big.Int).Sub(big.NewInt(1024000), milli(big.NewInt(math.MaxInt64)))},
	}
	for _, tc := range cases {
		if got := Milli(Free(tc.q, tc.name, nil)); got.Cmp(tc.want) != 0 {
			t.Errorf("Free(%v, %s) = %s milli, want %s", tc.q.Spec.Hard, tc.name, got, tc.want)
		}
	}
}

// Charge multiplies and sums exactly: a job of thousands of pods of exabytes.
func TestChargePastInt64(t *testing.T) {
	parts := append(holder("", 5000, "1Ei").Parts, holder("", 1, "1Gi").Parts...)
	got := Charge(parts, memoryQuota("1Ki", ""))["requests.memory"]
	want := new(big.Int).Add(pow2(60, 5000), pow2(30, 1))
	if m := Milli(got); m.Cmp(milli(want)) != 0 {
		t.Errorf("charge = %s milli, want %s", m, milli(want))
	}
}

// Parts are charged against the quota as it is now: every name it limits
// that pods count for, only when its scopes select the pods.
func TestChargeAgainstTodaysQuota(t *testing.T) {
	gpus := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse(n), "pods": resource.MustParse("1")}
	}
	part := Part{ReplicatedJob: "node", Pods: 2, PerPod: gpus("8"), Scope: Scope{PriorityClassName: "high"}}
	quotaOf := func(name string, hard corev1.ResourceList, scope *corev1.ScopeSelector) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard, ScopeSelector: scope}}
	}
	only := func(class string) *corev1.ScopeSelector {
		return &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{class},
		}}}
	}
	cases := map[string]struct {
		parts []Part
		q     *corev1.ResourceQuota
		want  corev1.ResourceList
	}{
		"a GPU quota created after admission counts the pods' GPUs": {
			parts: []Part{part},
			q:     quotaOf("gpus", corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16")}, nil),
			want:  corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16")},
		},
		"every name the quota limits": {
			parts: []Part{part},
			q:     quotaOf("both", corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16"), "pods": resource.MustParse("10")}, nil),
			want:  corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16"), "pods": resource.MustParse("2")},
		},
		"standard names read through the canonical ones an entry keeps": {
			parts: []Part{{ReplicatedJob: "node", Pods: 2, PerPod: Canonical(corev1.ResourceList{
				"pods": resource.MustParse("1"), "count/pods": resource.MustParse("1"),
				"cpu": resource.MustParse("4"), "requests.cpu": resource.MustParse("4"),
			})}},
			q:    quotaOf("std", corev1.ResourceList{"cpu": resource.MustParse("100"), "count/pods": resource.MustParse("10")}, nil),
			want: corev1.ResourceList{"cpu": resource.MustParse("8"), "count/pods": resource.MustParse("2")},
		},
		"a quota whose scopes do not select the pods": {
			parts: []Part{part},
			q:     quotaOf("low", corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16")}, only("low")),
		},
		"a quota whose scopes select the pods": {
			parts: []Part{part},
			q:     quotaOf("high", corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16")}, only("high")),
			want:  corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Charge(tc.parts, tc.q), cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("charge (-want +got):\n%s", diff)
			}
		})
	}
}
