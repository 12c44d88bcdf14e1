package store

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
)

// FuzzReadReservation: whatever a hand edit stores in a QuotaReservation
// (spec.entries has no schema in the CRD, and the schemas of its other
// fields allow any quantity, negative ones included), reading it either
// refuses it naming a field (CheckReadable, as every reader does first), or
// gives holders that hold nothing negative of any quota and a status.used
// that only grows: never a panic, never quota given back, never an amount
// whose exact arithmetic takes minutes (a seed hangs without the check).
//
//	go test -run '^$' -fuzz FuzzReadReservation ./internal/reservations/store/
func FuzzReadReservation(f *testing.F) {
	for _, seed := range readSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if render.ScreenQuantities(data) != nil {
			// apimachinery's parser would spend minutes on a quantity
			// in it (render/slowquantities.go): the informer's decode,
			// before any of mpiguard's code (docs/reliability.md).
			return
		}
		res := &v1alpha1.QuotaReservation{}
		if err := json.Unmarshal(data, res); err != nil {
			return // not JSON the apiserver would store
		}
		res.Namespace, res.Name = "mpiguard-system", "team-a"
		if err := CheckReadable(res); err != nil {
			var invalid *InvalidError
			switch {
			case errors.As(err, &invalid):
				for _, e := range invalid.Errs {
					if !strings.HasPrefix(e.Field, "spec") {
						t.Fatalf("refused naming %q, not a field of the spec: %v", e.Field, err)
					}
				}
			default:
				t.Fatalf("CheckReadable = %T %v, want an *InvalidError", err, err)
			}
			return
		}
		// What admission adds to status.used (spec.uncounted) only grows it.
		for _, u := range res.Spec.Uncounted {
			for name, q := range u.Usage {
				if q.Sign() < 0 {
					t.Fatalf("uncounted %s of %s is %s: status.used would shrink", name, u.ResourceQuota, q.String())
				}
			}
		}
		quotas := fuzzQuotas()
		holders := Reservations(res)
		quota.ChargeAgainst(holders, quotas)
		for i := range quotas {
			for name, held := range quota.ReservedOf(&quotas[i], holders) {
				if held.Total.Sign() < 0 {
					t.Fatalf("holders give back %s of %s of quota %s", held.Total.String(), name, quotas[i].Name)
				}
				for _, by := range held.By {
					if by.Amount.Sign() < 0 {
						t.Fatalf("%s gives back %s of %s", by.TrainJob, by.Amount.String(), name)
					}
				}
			}
		}
	})
}

// readSeeds are objects as mpiguard stores them (shapes compacted): one
// holding two jobs, and the same with each kind of amount edited negative.
func readSeeds(f *testing.F) [][]byte {
	stored := func(edit func(*v1alpha1.QuotaReservation)) []byte {
		a := recordOf(entry("a", 2))
		a.Parts[0].PerPod = corev1.ResourceList{"pods": resource.MustParse("1")}
		shaped := Record{Entry: entry("b", 3), Parts: []quota.Part{
			{ReplicatedJob: "node", Pods: 3, Jobs: 1, PerPod: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("8"), "pods": resource.MustParse("1")}},
			{Objects: corev1.ResourceList{"count/secrets": resource.MustParse("1")}},
		}}
		res := &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Namespace: "team-a"}}
		encode(res, []Record{a, shaped})
		res.Spec.Uncounted = []v1alpha1.UncountedUsage{{ResourceQuota: "q", Since: metav1.Now(), Usage: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("8")}}}
		edit(res)
		js, err := json.Marshal(res)
		if err != nil {
			f.Fatal(err)
		}
		return js
	}
	negative := resource.MustParse("-64")
	return [][]byte{
		stored(func(*v1alpha1.QuotaReservation) {}),
		stored(func(r *v1alpha1.QuotaReservation) { r.Spec.PodShapes[1].PerPod["requests.nvidia.com/gpu"] = negative }),
		stored(func(r *v1alpha1.QuotaReservation) { r.Spec.ObjectShapes[0]["count/secrets"] = negative }),
		stored(func(r *v1alpha1.QuotaReservation) {
			r.Spec.PodShapes[1].PerPod["requests.nvidia.com/gpu"] = resource.MustParse("1e2147483647")
		}),
		stored(func(r *v1alpha1.QuotaReservation) { r.Spec.Uncounted[0].Usage["requests.nvidia.com/gpu"] = negative }),
		stored(func(r *v1alpha1.QuotaReservation) { r.Spec.PodShapes[0].PerPod["pods"] = negative }),
		[]byte(`{"spec":{"namespace":"team-a","entries":[{"trainJob":"a","operation":"CREATE","admittedAt":"2026-11-27T03:00:00Z","holdUntil":"2026-11-27T03:01:00Z","parts":[{"pods":"two"}]}]}}`),
	}
}

// fuzzQuotas is a quota of every kind of amount the seeds charge, with
// something used already.
func fuzzQuotas() []corev1.ResourceQuota {
	list := corev1.ResourceList{
		"requests.nvidia.com/gpu": resource.MustParse("64"), "pods": resource.MustParse("100"),
		"count/secrets": resource.MustParse("20"), "requests.cpu": resource.MustParse("100"),
	}
	used := corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("8"), "pods": resource.MustParse("1")}
	return []corev1.ResourceQuota{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "q", UID: "q-uid", ResourceVersion: "1"},
		Spec:       corev1.ResourceQuotaSpec{Hard: list},
		Status:     corev1.ResourceQuotaStatus{Hard: list, Used: used},
	}}
}
