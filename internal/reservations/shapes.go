package reservations

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
)

// compact moves what each part's pods count for quota (its PodShape) into
// res.Spec.PodShapes, and what its other objects count (Objects) into
// res.Spec.ObjectShapes, each distinct one once, and leaves the parts an
// index: jobs of one runtime share their shapes, so an object of many
// entries stays small. Every write carries it whole, and the apiserver's
// work for a write (decoding, schema validation, storage, watch) grows with
// its size. The tables are rebuilt
// from the entries, so shapes no entry uses any more are dropped. res must
// be expanded (every part inline); it is modified.
func compact(res *v1alpha1.QuotaReservation) {
	var shapes []v1alpha1.PodShape
	var objects []corev1.ResourceList
	for i := range res.Spec.Entries {
		parts := res.Spec.Entries[i].Parts
		for j := range parts {
			p := &parts[j]
			if p.Objects != nil {
				p.ObjectsShape, p.Objects = ptr.To(int32(add(&objects, p.Objects))), nil
			}
			if p.PerPod != nil { // a part that froze per-quota charges (quotas) has no shape
				p.Shape, p.PodShape = ptr.To(int32(add(&shapes, p.PodShape))), v1alpha1.PodShape{}
			}
		}
	}
	res.Spec.PodShapes, res.Spec.ObjectShapes = shapes, objects
}

// expand puts back into each part of res the shapes it refers to, so every
// reader sees parts inline. Readers call it after checkReadable, which
// refuses an index out of its table (only a hand edit makes one); a part
// whose index is out of its table anyway keeps no usage rather than
// another part's. res is modified.
func expand(res *v1alpha1.QuotaReservation) {
	for i := range res.Spec.Entries {
		parts := res.Spec.Entries[i].Parts
		for j := range parts {
			p := &parts[j]
			if p.Shape != nil {
				if k := int(*p.Shape); k >= 0 && k < len(res.Spec.PodShapes) {
					res.Spec.PodShapes[k].DeepCopyInto(&p.PodShape)
				}
				p.Shape = nil
			}
			if p.ObjectsShape != nil {
				if k := int(*p.ObjectsShape); k >= 0 && k < len(res.Spec.ObjectShapes) {
					p.Objects = res.Spec.ObjectShapes[k].DeepCopy()
				}
				p.ObjectsShape = nil
			}
		}
	}
	res.Spec.PodShapes, res.Spec.ObjectShapes = nil, nil
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
