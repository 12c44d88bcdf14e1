package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
)

// validEntries refuses what a schema would, and shape indexes out of their
// tables, which one cannot, naming each field.
func TestValidEntries(t *testing.T) {
	entries := field.NewPath("spec", "entries")
	part := entries.Index(0).Child("parts").Index(0)
	tests := []struct {
		name string
		edit func(*v1alpha1.QuotaReservation)
		want field.ErrorList
	}{
		{name: "as mpiguard writes it", edit: func(*v1alpha1.QuotaReservation) {}},
		{
			name: "no job, an unknown operation, no times",
			edit: func(r *v1alpha1.QuotaReservation) {
				e := &r.Spec.Entries[0]
				e.TrainJob, e.Operation = "", "DELETE"
				e.AdmittedAt, e.HoldUntil = metav1.Time{}, metav1.Time{}
			},
			want: field.ErrorList{
				field.Required(entries.Index(0).Child("trainJob"), ""),
				field.NotSupported(entries.Index(0).Child("operation"), "DELETE", []string{"CREATE", "UPDATE"}),
				field.Required(entries.Index(0).Child("admittedAt"), ""),
				field.Required(entries.Index(0).Child("holdUntil"), ""),
			},
		},
		{
			name: "negative counts",
			edit: func(r *v1alpha1.QuotaReservation) {
				p := &r.Spec.Entries[0].Parts[0]
				p.Pods, p.Jobs = -1, -2
			},
			want: field.ErrorList{
				field.Invalid(part.Child("pods"), int32(-1), "must be at least 0"),
				field.Invalid(part.Child("jobs"), int32(-2), "must be at least 0"),
			},
		},
		{
			name: "a negative amount not counted",
			edit: func(r *v1alpha1.QuotaReservation) {
				r.Spec.Uncounted = []v1alpha1.UncountedUsage{{ResourceQuota: "q", Usage: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("-8")}}}
			},
			want: field.ErrorList{
				field.Invalid(field.NewPath("spec", "uncounted").Index(0).Child("usage").Key("requests.nvidia.com/gpu"), "-8", "must not be negative"),
			},
		},
		{
			name: "negative amounts in the shape tables",
			edit: func(r *v1alpha1.QuotaReservation) {
				r.Spec.PodShapes = []v1alpha1.PodShape{{PerPod: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("-8")}}}
				r.Spec.ObjectShapes = []corev1.ResourceList{{"count/secrets": resource.MustParse("1")}, {"count/secrets": resource.MustParse("-1")}}
			},
			want: field.ErrorList{
				field.Invalid(field.NewPath("spec", "podShapes").Index(0).Child("perPod").Key("requests.nvidia.com/gpu"), "-8", "must not be negative"),
				field.Invalid(field.NewPath("spec", "objectShapes").Index(1).Key("count/secrets"), "-1", "must not be negative"),
			},
		},
		{
			name: "an amount larger than Kubernetes quantities may be",
			edit: func(r *v1alpha1.QuotaReservation) {
				r.Spec.PodShapes = []v1alpha1.PodShape{{PerPod: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("1e2147483647")}}}
			},
			want: field.ErrorList{
				field.Invalid(field.NewPath("spec", "podShapes").Index(0).Child("perPod").Key("requests.nvidia.com/gpu"), "10e2147483646", "must be at most 2^63-1 in magnitude, the largest quantity Kubernetes represents"),
			},
		},
		{
			name: "shape indexes out of their tables",
			edit: func(r *v1alpha1.QuotaReservation) {
				p := &r.Spec.Entries[0].Parts[0]
				p.Shape, p.ObjectsShape = ptr.To(int32(-1)), ptr.To(int32(0))
			},
			want: field.ErrorList{
				field.Invalid(part.Child("shape"), int32(-1), "must be an index of spec.podShapes (0)"),
				field.Invalid(part.Child("objectsShape"), int32(0), "must be an index of spec.objectShapes (0)"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Namespace: "team-a", Entries: []v1alpha1.ReservationEntry{entry("a", 2)}}}
			tt.edit(res)
			if diff := cmp.Diff(tt.want, validEntries(res)); diff != "" {
				t.Errorf("validEntries (-want +got):\n%s", diff)
			}
		})
	}
}

// An object edited by hand into one mpiguard would not write is refused on
// every read, live or cached, with the field and how to mend it: never
// decided on as if the broken entry charged nothing.
func TestInvalidEntriesAreRefused(t *testing.T) {
	ctx := context.Background()
	s, c := storeHolding(t, "team-a", entry("a", 1))
	edited := &v1alpha1.QuotaReservation{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: "team-a"}, edited); err != nil {
		t.Fatal(err)
	}
	edited.Spec.Entries[0].Parts[1].Pods = -4 // the fake client has no schema to refuse it
	if err := c.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	for _, live := range []bool{true, false} {
		_, err := s.Get(ctx, "team-a", live)
		var invalid *InvalidError
		if !errors.As(err, &invalid) {
			t.Fatalf("Get(live=%v) of a hand-broken object = %v, want an *InvalidError", live, err)
		}
		for _, want := range []string{"spec.entries[0].parts[1].pods", "kubectl edit quotareservation -n mpiguard-system team-a"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		}
	}
}

// An object whose spec did not decode (a value of the wrong type, which the
// CRD lets through) is refused naming the entry, never read as empty.
func TestUndecodableSpecIsRefused(t *testing.T) {
	stored := `{"metadata":{"name":"team-a","namespace":"mpiguard-system"},"spec":{"namespace":"team-a","entries":[
		{"trainJob":"a","operation":"CREATE","admittedAt":"2026-11-27T03:00:00Z","holdUntil":"2026-11-27T03:01:00Z","parts":[{"pods":"two"}]}]}}`
	res := &v1alpha1.QuotaReservation{}
	if err := json.Unmarshal([]byte(stored), res); err != nil {
		t.Fatal(err)
	}
	err := CheckReadable(res)
	var invalid *InvalidError
	if !errors.As(err, &invalid) {
		t.Fatalf("CheckReadable = %v, want an *InvalidError", err)
	}
	for _, want := range []string{"spec.entries[0]", "parts.pods", "kubectl edit quotareservation -n mpiguard-system team-a"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
