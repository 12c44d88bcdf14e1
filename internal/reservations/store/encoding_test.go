package store

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/quota"
)

// Like jobs share their pod and object shapes in the stored object, and
// reading it back gives every part its shapes again.
func TestEncodeAndRead(t *testing.T) {
	gpuShape := corev1.ResourceList{"pods": resource.MustParse("1"), "requests.nvidia.com/gpu": resource.MustParse("4")}
	cpuShape := corev1.ResourceList{"pods": resource.MustParse("1"), "requests.cpu": resource.MustParse("1")}
	job := func(name string) Record {
		return Record{Entry: v1alpha1.ReservationEntry{TrainJob: name}, Parts: []quota.Part{
			{ReplicatedJob: "launcher", Pods: 1, PerPod: cpuShape, Scope: quota.Scope{PriorityClassName: "high"}},
			{ReplicatedJob: "node", Pods: 2, PerPod: gpuShape},
			{Objects: corev1.ResourceList{"count/secrets": resource.MustParse("1"), "count/configmaps": resource.MustParse("2")}},
		}}
	}
	records := []Record{job("a"), job("b")}
	res := &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Namespace: "team-a"}}

	encode(res, records)
	if len(res.Spec.PodShapes) != 2 || len(res.Spec.ObjectShapes) != 1 {
		t.Fatalf("podShapes = %d, objectShapes = %d, want 2 and 1 (each distinct shape once)", len(res.Spec.PodShapes), len(res.Spec.ObjectShapes))
	}
	for _, e := range res.Spec.Entries {
		if p := e.Parts[2]; p.ObjectsShape == nil || p.Shape != nil {
			t.Errorf("entry %s objects part: objectsShape %v, shape %v; want an objects index only", e.TrainJob, p.ObjectsShape, p.Shape)
		}
		for _, p := range e.Parts[:2] {
			if p.Shape == nil || p.ObjectsShape != nil {
				t.Errorf("entry %s part %s: shape %v, objectsShape %v; want a shape index only", e.TrainJob, p.ReplicatedJob, p.Shape, p.ObjectsShape)
			}
		}
	}

	want := []quota.Reservation{{TrainJob: "team-a/a", Parts: records[0].Parts}, {TrainJob: "team-a/b", Parts: records[1].Parts}}
	if d := cmp.Diff(want, Reservations(res), cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }), cmp.AllowUnexported(quota.Reservation{})); d != "" {
		t.Errorf("Reservations(encode(records)) (-want +got):\n%s", d)
	}

	t.Run("shapes no entry uses are dropped", func(t *testing.T) {
		res := &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Namespace: "team-a"}}
		encode(res, []Record{job("a")})
		res.Spec.Entries[0].Parts = res.Spec.Entries[0].Parts[1:] // the retiring controller's kind of write leaves cpuShape unused
		read := Record{Entry: res.Spec.Entries[0], Parts: partsOf(res, res.Spec.Entries[0].Parts)}
		encode(res, []Record{read})
		if len(res.Spec.PodShapes) != 1 {
			t.Errorf("podShapes = %d, want 1", len(res.Spec.PodShapes))
		}
	})
	t.Run("an index past the table charges nothing", func(t *testing.T) {
		res := &v1alpha1.QuotaReservation{}
		if p := partsOf(res, []v1alpha1.ReservedPart{{ReplicatedJob: "node", Pods: 1, Shape: ptr.To[int32](7)}})[0]; p.PerPod != nil {
			t.Errorf("part = %+v, want no usage", p)
		}
		if p := partsOf(res, []v1alpha1.ReservedPart{{ObjectsShape: ptr.To[int32](3)}})[0]; p.Objects != nil {
			t.Errorf("objects part = %+v, want no objects", p)
		}
	})
}
