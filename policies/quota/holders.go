package quota

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mpiguard/mpiguard/policies/quota/api/v1alpha1"
)

// Holder is an admitted TrainJob whose pods do not all exist yet: the quotas do
// not count its missing pods, but will. Parts are what those pods charge.
type Holder struct {
	// TrainJob is "namespace/name", for decision logs and messages.
	TrainJob string
	// UID is the TrainJob's: a create under the name of a live job is
	// another job, and holds on top of it.
	UID   types.UID
	Parts []v1alpha1.ReservedPart
}

// Held is what holders hold of one quota resource name.
type Held struct {
	// Total is the sum over holders.
	Total resource.Quantity
	// By lists each holder's amount, largest first (then by name).
	By []HeldBy
}

// HeldBy is one holder's amount of a quota resource name.
type HeldBy struct {
	TrainJob string
	Amount   resource.Quantity
}

// Reserved sums, per resource name of quota q, what holders hold of it.
func Reserved(q *corev1.ResourceQuota, holders []Holder) map[corev1.ResourceName]*Held {
	out := map[corev1.ResourceName]*Held{}
	for _, h := range holders {
		for name, amount := range Charge(h.Parts, q) {
			if _, counted := q.Spec.Hard[name]; !counted || amount.IsZero() {
				continue
			}
			held := out[name]
			if held == nil {
				held = &Held{}
				out[name] = held
			}
			held.Total.Add(amount)
			held.By = append(held.By, HeldBy{TrainJob: h.TrainJob, Amount: amount})
		}
	}
	for _, held := range out {
		slices.SortFunc(held.By, func(a, b HeldBy) int {
			if c := b.Amount.Cmp(a.Amount); c != 0 {
				return c
			}
			return cmp.Compare(a.TrainJob, b.TrainJob)
		})
	}
	return out
}

// Free is what quota q has free for name: hard - status.used - held, exact. A
// negative amount means the quota is over-committed.
func Free(q *corev1.ResourceQuota, name corev1.ResourceName, held *Held) resource.Quantity {
	free := q.Spec.Hard[name].DeepCopy()
	free.Sub(q.Status.Used[name])
	if held != nil {
		free.Sub(held.Total)
	}
	return free
}
