package quota

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
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
	// charges is what Parts charge each quota it was charged against
	// (ChargeAgainst), by chargeKey: Reserved reads it instead of charging
	// the parts again.
	charges map[string]corev1.ResourceList
}

// ChargeAgainst charges each of holders against each of quotas once, in
// place: the decisions of one round of a batch, and audit's judgements of a
// namespace, judge many jobs against the same holders and quotas, and
// charging every holder again for each of them would repeat the same work
// once per job (BenchmarkBurstCreate). A holder's
// parts must not change afterwards; a quota that changes (another
// resourceVersion) is charged anew by Reserved.
func ChargeAgainst(holders []Holder, quotas []corev1.ResourceQuota) {
	for i := range holders {
		charges := make(map[string]corev1.ResourceList, len(quotas))
		for j := range quotas {
			charges[chargeKey(&quotas[j])] = Charge(holders[i].Parts, &quotas[j])
		}
		holders[i].charges = charges
	}
}

// chargeKey identifies a quota as it was read: its spec is what Charge reads.
func chargeKey(q *corev1.ResourceQuota) string {
	return q.Namespace + "/" + q.Name + "/" + string(q.UID) + "/" + q.ResourceVersion
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
	key := chargeKey(q)
	for _, h := range holders {
		charge, charged := h.charges[key]
		if !charged {
			charge = Charge(h.Parts, q)
		}
		for name, amount := range charge {
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

// ReservedEach is Reserved of each of quotas, in their order.
func ReservedEach(quotas []corev1.ResourceQuota, holders []Holder) []map[corev1.ResourceName]*Held {
	out := make([]map[corev1.ResourceName]*Held, len(quotas))
	for i := range quotas {
		out[i] = Reserved(&quotas[i], holders)
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
