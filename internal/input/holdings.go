package input

import (
	"encoding/json"
	"math/big"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"

	"github.com/mpiguard/mpiguard/internal/quota"
)

// Holdings is what a namespace's admitted jobs whose pods do not exist yet
// (quota.Holder) hold of each of its ResourceQuotas, as the policy input
// shows it: input.quotas[].reserved and reservedBy, each demand's held,
// heldDisplay and heldBy, and the held amounts input.job.objects reads. It
// carries with the quotas what of their status.used their controller had
// not counted (Uncounted), which each demand shows.
//
// It depends on the quotas and the holders only, not on the job judged, so a
// round of quota decisions builds it once for all the jobs it judges against
// the same holders (pipeline.NewQuotaState) instead of once per decision:
// listing every holder is O(holders), so sharing it makes a round's cost
// grow with its decisions plus its holders, not their product
// (BenchmarkJudgeManyHolders). It is built on first use, then read
// only: safe for concurrent use. The quotas and holders must not change
// while it is in use.
type Holdings struct {
	quotas    []corev1.ResourceQuota
	holders   []quota.Holder
	uncounted Uncounted

	once sync.Once
	of   []quotaHoldings // by index in quotas
}

// quotaHoldings is what the holders hold of one quota.
type quotaHoldings struct {
	held       map[corev1.ResourceName]*quota.Held // quota.Reserved
	reserved   map[string]quantityInput
	reservedBy []string
	// names are the demand parts, per quota resource name the quota charges
	// pods by (quota.ChargedName).
	names map[corev1.ResourceName]*heldPart
	// reservedTerm and reservedByTerm are reserved and reservedBy as OPA values.
	reservedTerm, reservedByTerm *ast.Term
}

// heldPart is what the holders hold of one quota resource name, as
// input.quotas[].demand[name] shows it.
type heldPart struct {
	held    json.Number
	display string
	by      []heldByInput
	byTerm  *ast.Term
}

// NewHoldings returns what holders hold of quotas, built when first read;
// uncounted is what the quotas' status.used includes of pods their
// controller had not counted (Source.Uncounted).
func NewHoldings(quotas []corev1.ResourceQuota, holders []quota.Holder, uncounted Uncounted) *Holdings {
	return &Holdings{quotas: quotas, holders: holders, uncounted: uncounted}
}

// Uncounted is, by ResourceQuota name, what the quota's status.used as
// given counts of pods that exist but that its controller's last count
// missed (the QuotaReservation's spec.uncounted, added to status.used by
// reservations.ReadState): shown in input.quotas[].demand[].uncounted so a
// message can say why status.used exceeds what kubectl shows.
type Uncounted map[string]corev1.ResourceList

// quota returns what the holders hold of quotas[i].
func (h *Holdings) quota(i int) *quotaHoldings {
	h.once.Do(h.build)
	return &h.of[i]
}

// held returns, per quota, what the holders hold of each resource name
// (quota.Reserved): what input.job.objects compares object counts with.
func (h *Holdings) held() []map[corev1.ResourceName]*quota.Held {
	h.once.Do(h.build)
	out := make([]map[corev1.ResourceName]*quota.Held, len(h.of))
	for i := range h.of {
		out[i] = h.of[i].held
	}
	return out
}

func (h *Holdings) build() {
	h.of = make([]quotaHoldings, len(h.quotas))
	for i := range h.quotas {
		q := &h.quotas[i]
		held, by := reservedFor(q, h.holders)
		reserved := corev1.ResourceList{}
		for name, sum := range held {
			reserved[name] = sum.Total
		}
		out := quotaHoldings{held: held, reserved: resourcesOf(reserved), reservedBy: list(by), names: map[corev1.ResourceName]*heldPart{}}
		out.reservedTerm, out.reservedByTerm = quantities(out.reserved), stringList(out.reservedBy)
		for name := range q.Spec.Hard {
			if _, res, ok := quota.ChargedName(name); ok {
				out.names[name] = heldPartOf(res, held[name])
			}
		}
		h.of[i] = out
	}
}

// heldPartOf is what holders hold of a quota resource name of resource res.
func heldPartOf(res string, held *quota.Held) *heldPart {
	total, by := new(big.Int), []heldByInput{}
	if held != nil {
		total = quota.Milli(held.Total)
		for _, h := range held.By {
			m := quota.Milli(h.Amount)
			by = append(by, heldByInput{TrainJob: h.TrainJob, Milli: number(m), Display: quota.Display(res, m)})
		}
	}
	return &heldPart{held: number(total), display: quota.Display(res, total), by: by, byTerm: listOf(by, (*heldByInput).value)}
}

// reservedFor is what holders hold of quota q per resource name, and the
// holders that hold any of it, in the order given (input.quotas[].reservedBy).
func reservedFor(q *corev1.ResourceQuota, holders []quota.Holder) (map[corev1.ResourceName]*quota.Held, []string) {
	held := quota.Reserved(q, holders)
	holding := map[string]bool{}
	for _, h := range held {
		for _, b := range h.By {
			holding[b.TrainJob] = true
		}
	}
	var by []string
	for _, h := range holders {
		if holding[h.TrainJob] {
			by = append(by, h.TrainJob)
			delete(holding, h.TrainJob) // a job listed twice is named once
		}
	}
	return held, by
}
