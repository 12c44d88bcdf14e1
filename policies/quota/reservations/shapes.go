package reservations

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/policies/quota/api/v1alpha1"
)

// compact moves what each part's pods count for quota (its PodShape) into
// res.Spec.PodShapes, each distinct shape once, and leaves the parts an
// index: jobs of one runtime share their shapes, so an object of many
// entries stays small, and every write carries it whole (measured: 500
// sequential creates into one namespace, p50 141-148 ms with usage inline in
// every entry, 112-116 ms with shapes; docs/performance.md). The table is
// rebuilt from the entries, so shapes no entry uses any more are dropped.
// res must be expanded (every part inline); it is modified.
func compact(res *v1alpha1.QuotaReservation) {
	var shapes []v1alpha1.PodShape
	for i := range res.Spec.Entries {
		parts := res.Spec.Entries[i].Parts
		for j := range parts {
			p := &parts[j]
			if p.PerPod == nil { // a part that froze per-quota charges (quotas) has no shape
				continue
			}
			k := indexOf(shapes, p.PodShape)
			if k < 0 {
				k = len(shapes)
				shapes = append(shapes, p.PodShape)
			}
			p.Shape, p.PodShape = ptr.To(int32(k)), v1alpha1.PodShape{}
		}
	}
	res.Spec.PodShapes = shapes
}

// expand puts back into each part of res the shape it refers to, so every
// reader sees parts inline. A part whose index is out of the table keeps no
// usage: it charges nothing rather than another part's pods (the apiserver
// validates the index's sign; only a hand edit could break it). res is
// modified.
func expand(res *v1alpha1.QuotaReservation) {
	for i := range res.Spec.Entries {
		parts := res.Spec.Entries[i].Parts
		for j := range parts {
			p := &parts[j]
			if p.Shape == nil {
				continue
			}
			if k := int(*p.Shape); k < len(res.Spec.PodShapes) {
				res.Spec.PodShapes[k].DeepCopyInto(&p.PodShape)
			}
			p.Shape = nil
		}
	}
	res.Spec.PodShapes = nil
}

func indexOf(shapes []v1alpha1.PodShape, s v1alpha1.PodShape) int {
	for i := range shapes {
		if equality.Semantic.DeepEqual(shapes[i], s) {
			return i
		}
	}
	return -1
}
