package reservations

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
)

// Like jobs share their pod and object shapes in the stored object, and
// reading it back gives every part its shapes again.
func TestCompactAndExpand(t *testing.T) {
	gpuShape := v1alpha1.PodShape{PerPod: corev1.ResourceList{"pods": resource.MustParse("1"), "requests.nvidia.com/gpu": resource.MustParse("4")}}
	cpuShape := v1alpha1.PodShape{PerPod: corev1.ResourceList{"pods": resource.MustParse("1"), "requests.cpu": resource.MustParse("1")},
		Scope: v1alpha1.PodScope{PriorityClassName: "high"}}
	job := func(name string) v1alpha1.ReservationEntry {
		return v1alpha1.ReservationEntry{TrainJob: name, Parts: []v1alpha1.ReservedPart{
			{ReplicatedJob: "launcher", Pods: 1, PodShape: cpuShape},
			{ReplicatedJob: "node", Pods: 2, PodShape: gpuShape},
			{Objects: corev1.ResourceList{"count/secrets": resource.MustParse("1"), "count/configmaps": resource.MustParse("2")}},
		}}
	}
	legacy := v1alpha1.ReservationEntry{TrainJob: "old", Parts: []v1alpha1.ReservedPart{{ReplicatedJob: "node", Pods: 1,
		Quotas: []v1alpha1.QuotaCharge{{Quota: "q", PerPod: corev1.ResourceList{"pods": resource.MustParse("1")}}}}}}
	res := &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Entries: []v1alpha1.ReservationEntry{job("a"), job("b"), legacy}}}
	want := res.DeepCopy()

	compact(res)
	if len(res.Spec.PodShapes) != 2 || len(res.Spec.ObjectShapes) != 1 {
		t.Fatalf("podShapes = %d, objectShapes = %d, want 2 and 1 (each distinct shape once)", len(res.Spec.PodShapes), len(res.Spec.ObjectShapes))
	}
	for _, e := range res.Spec.Entries[:2] {
		if p := e.Parts[2]; p.ObjectsShape == nil || p.Objects != nil || p.Shape != nil {
			t.Errorf("entry %s objects part: objectsShape %v, objects %v, shape %v; want an index and nothing inline", e.TrainJob, p.ObjectsShape, p.Objects, p.Shape)
		}
		for _, p := range e.Parts[:2] {
			if p.Shape == nil || p.PerPod != nil {
				t.Errorf("entry %s part %s: shape %v, perPod %v; want an index and nothing inline", e.TrainJob, p.ReplicatedJob, p.Shape, p.PerPod)
			}
		}
	}
	if p := res.Spec.Entries[2].Parts[0]; p.Shape != nil || len(p.Quotas) != 1 {
		t.Errorf("a part with frozen per-quota charges: %+v, want it as it was", p)
	}

	expand(res)
	if d := cmp.Diff(want, res, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); d != "" {
		t.Errorf("expand(compact(res)) (-want +got):\n%s", d)
	}

	t.Run("shapes no entry uses are dropped", func(t *testing.T) {
		res := &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Entries: []v1alpha1.ReservationEntry{job("a")}}}
		compact(res)
		res.Spec.Entries[0].Parts = res.Spec.Entries[0].Parts[1:] // the retirer's kind of write leaves cpuShape unused
		expand(res)
		compact(res)
		if len(res.Spec.PodShapes) != 1 {
			t.Errorf("podShapes = %d, want 1", len(res.Spec.PodShapes))
		}
	})
	t.Run("an index past the table charges nothing", func(t *testing.T) {
		res := &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Entries: []v1alpha1.ReservationEntry{
			{TrainJob: "x", Parts: []v1alpha1.ReservedPart{{ReplicatedJob: "node", Pods: 1, Shape: ptr.To[int32](7)}}},
		}}}
		expand(res)
		if p := res.Spec.Entries[0].Parts[0]; p.PerPod != nil || p.Shape != nil {
			t.Errorf("part = %+v, want no usage", p)
		}
		res.Spec.Entries[0].Parts[0] = v1alpha1.ReservedPart{ObjectsShape: ptr.To[int32](3)}
		expand(res)
		if p := res.Spec.Entries[0].Parts[0]; p.Objects != nil || p.ObjectsShape != nil {
			t.Errorf("objects part = %+v, want no objects", p)
		}
	})
}
