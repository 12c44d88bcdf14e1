package store

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/quota"
)

// Reservations are what the entries of res hold, one per entry in order,
// their parts read from res's shape tables (the lists are shared with res:
// read only). res must be readable (CheckReadable, which every Get runs).
func Reservations(res *v1alpha1.QuotaReservation) []quota.Reservation {
	out := make([]quota.Reservation, len(res.Spec.Entries))
	for i := range res.Spec.Entries {
		e := &res.Spec.Entries[i]
		out[i] = quota.Reservation{TrainJob: res.Spec.Namespace + "/" + e.TrainJob, UID: e.UID, Parts: partsOf(res, e.Parts)}
	}
	return out
}

// partsOf reads stored parts: what their pods count for quota from
// spec.podShapes, what the job's other objects count from spec.objectShapes.
// CheckReadable refuses an index out of its table (only a hand edit makes
// one); a part whose index is out of its table anyway holds no usage rather
// than another part's.
func partsOf(res *v1alpha1.QuotaReservation, stored []v1alpha1.ReservedPart) []quota.Part {
	if len(stored) == 0 {
		return nil
	}
	out := make([]quota.Part, len(stored))
	for i := range stored {
		p := &stored[i]
		part := quota.Part{ReplicatedJob: p.ReplicatedJob, Pods: p.Pods, Jobs: p.Jobs}
		if p.Shape != nil {
			if k := int(*p.Shape); k >= 0 && k < len(res.Spec.PodShapes) {
				shape := &res.Spec.PodShapes[k]
				part.PerPod, part.Scope = shape.PerPod, quota.Scope(shape.Scope)
			}
		}
		if p.ObjectsShape != nil {
			if k := int(*p.ObjectsShape); k >= 0 && k < len(res.Spec.ObjectShapes) {
				part.Objects = res.Spec.ObjectShapes[k]
			}
		}
		out[i] = part
	}
	return out
}

// encode sets the entries of res to records, each part's pod shape (PerPod
// and Scope) in spec.podShapes and its objects in spec.objectShapes, each
// distinct one once, the parts referring to them by index: jobs of one
// runtime share their shapes, so an object of many entries stays small
// (every write carries it whole, and the apiserver's work for a write grows
// with its size). The tables are rebuilt from the records, so shapes no
// entry uses any more are dropped.
func encode(res *v1alpha1.QuotaReservation, records []Record) {
	var shapes []v1alpha1.PodShape
	var objects []corev1.ResourceList
	entries := make([]v1alpha1.ReservationEntry, len(records))
	for i := range records {
		entries[i] = records[i].Entry
		parts := make([]v1alpha1.ReservedPart, len(records[i].Parts))
		for j := range records[i].Parts {
			p := &records[i].Parts[j]
			stored := v1alpha1.ReservedPart{ReplicatedJob: p.ReplicatedJob, Pods: p.Pods, Jobs: p.Jobs}
			if p.Objects != nil {
				stored.ObjectsShape = ptr.To(int32(add(&objects, p.Objects)))
			}
			if p.PerPod != nil {
				stored.Shape = ptr.To(int32(add(&shapes, v1alpha1.PodShape{PerPod: p.PerPod, Scope: v1alpha1.PodScope(p.Scope)})))
			}
			parts[j] = stored
		}
		if len(parts) == 0 {
			parts = nil
		}
		entries[i].Parts = parts
	}
	if len(entries) == 0 {
		entries = nil
	}
	res.Spec.Entries, res.Spec.PodShapes, res.Spec.ObjectShapes = entries, shapes, objects
}

// add returns the index of s in table, appending it when it is not there yet.
func add[T any](table *[]T, s T) int {
	for i := range *table {
		if equality.Semantic.DeepEqual((*table)[i], s) {
			return i
		}
	}
	*table = append(*table, s)
	return len(*table) - 1
}
