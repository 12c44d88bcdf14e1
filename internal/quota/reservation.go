package quota

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Reservation is the quota an admitted TrainJob holds while its pods do not
// all exist yet: the quotas do not count its missing pods, but will. Parts
// are what those pods (and the job's objects not created yet) charge.
type Reservation struct {
	// TrainJob is "namespace/name", for decision logs and messages.
	TrainJob string
	// UID is the TrainJob's: a create under the name of a live job is
	// another job, and holds on top of it.
	UID   types.UID
	Parts []Part
	// charges is what Parts charge each quota it was charged against
	// (ChargeAgainst), by chargeKey: ReservedOf reads it instead of charging
	// the parts again.
	charges map[string]corev1.ResourceList
}

// ChargeAgainst charges each of reservations against each of quotas once, in
// place: the decisions of one round of a batch, and audit's judgements of a
// namespace, judge many jobs against the same reservations and quotas, which
// need not be charged again for each of them. A reservation's parts must not
// change afterwards; a quota that changes (another resourceVersion) is
// charged anew by ReservedOf.
func ChargeAgainst(reservations []Reservation, quotas []corev1.ResourceQuota) {
	for i := range reservations {
		charges := make(map[string]corev1.ResourceList, len(quotas))
		for j := range quotas {
			charges[chargeKey(&quotas[j])] = Charge(reservations[i].Parts, &quotas[j])
		}
		reservations[i].charges = charges
	}
}

// chargeKey identifies a quota as it was read: its spec is what Charge reads.
func chargeKey(q *corev1.ResourceQuota) string {
	return q.Namespace + "/" + q.Name + "/" + string(q.UID) + "/" + q.ResourceVersion
}

// Reserved is what reservations hold of one quota resource name.
type Reserved struct {
	// Total is the sum over the reservations.
	Total resource.Quantity
	// By lists each reservation's amount, largest first (then by job name).
	By []ReservedBy
}

// ReservedBy is one reservation's amount of a quota resource name.
type ReservedBy struct {
	TrainJob string
	Amount   resource.Quantity
}

// ReservedOf sums, per resource name of quota q, what reservations hold of it.
func ReservedOf(q *corev1.ResourceQuota, reservations []Reservation) map[corev1.ResourceName]*Reserved {
	out := map[corev1.ResourceName]*Reserved{}
	key := chargeKey(q)
	for _, h := range reservations {
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
				held = &Reserved{}
				out[name] = held
			}
			held.Total.Add(amount)
			held.By = append(held.By, ReservedBy{TrainJob: h.TrainJob, Amount: amount})
		}
	}
	for _, held := range out {
		slices.SortFunc(held.By, func(a, b ReservedBy) int {
			if c := b.Amount.Cmp(a.Amount); c != 0 {
				return c
			}
			return cmp.Compare(a.TrainJob, b.TrainJob)
		})
	}
	return out
}

// ReservedOfEach is ReservedOf each of quotas, in their order.
func ReservedOfEach(quotas []corev1.ResourceQuota, reservations []Reservation) []map[corev1.ResourceName]*Reserved {
	out := make([]map[corev1.ResourceName]*Reserved, len(quotas))
	for i := range quotas {
		out[i] = ReservedOf(&quotas[i], reservations)
	}
	return out
}

// Free is what quota q has free for name: hard - status.used - reserved,
// exact. A negative amount means the quota is over-committed.
func Free(q *corev1.ResourceQuota, name corev1.ResourceName, held *Reserved) resource.Quantity {
	free := q.Spec.Hard[name].DeepCopy()
	free.Sub(q.Status.Used[name])
	if held != nil {
		free.Sub(held.Total)
	}
	return free
}
