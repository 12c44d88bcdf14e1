package input

import (
	"encoding/json"
	"math/big"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mpiguard/mpiguard/internal/quota"
)

// QuotaState is what a decision is judged against besides the job itself:
// the namespace's ResourceQuotas (status.used as read), the reservations on
// them (quota.Reservation: admitted jobs whose pods do not all exist yet),
// and what of their status.used their controller had not counted
// (Uncounted), as the policy input shows them: input.quotas[].reserved and
// reservedBy, each demand's held, heldDisplay, heldBy and uncounted, and the
// reserved amounts input.job.objects reads.
//
// It depends on the quotas and the reservations only, not on the job judged, so a
// round of quota decisions builds it once for all the jobs it judges against
// the same reservations instead of once per decision. It is built on first
// use, then read only: safe for concurrent use. Neither the quotas nor the
// reservations may change while it is in use; use it by pointer.
type QuotaState struct {
	Quotas       []corev1.ResourceQuota
	Reservations []quota.Reservation
	Uncounted    Uncounted

	once sync.Once
	of   []reservedOfQuota // by index in quotas
}

// reservedOfQuota is what the reservations hold of one quota.
type reservedOfQuota struct {
	held       map[corev1.ResourceName]*quota.Reserved // quota.Reserved
	reserved   map[string]quantityInput
	reservedBy []string
	// names are the demand parts, per quota resource name the quota charges
	// pods by (quota.ChargedName).
	names map[corev1.ResourceName]*heldPart
	// reservedTerm and reservedByTerm are reserved and reservedBy as OPA values.
	reservedTerm, reservedByTerm *ast.Term
}

// heldPart is what the reservations hold of one quota resource name, as
// input.quotas[].demand[name] shows it.
type heldPart struct {
	held    json.Number
	display string
	by      []heldByInput
	byTerm  *ast.Term
}

// NewQuotaState returns the quota state of quotas, the reservations on them
// and what their status.used includes uncounted.
func NewQuotaState(quotas []corev1.ResourceQuota, reservations []quota.Reservation, uncounted Uncounted) *QuotaState {
	return &QuotaState{Quotas: quotas, Reservations: reservations, Uncounted: uncounted}
}

// Without is s without the reservation of the TrainJob key ("namespace/name")
// with uid: a job being decided replaces its own (a resume, a renewal). A
// create under the name of a live job has another UID: it is decided against
// everything the live job holds, never in its place. s itself when it has
// no such reservation.
func (s *QuotaState) Without(key string, uid types.UID) *QuotaState {
	others := WithoutJob(s.Reservations, key, uid)
	if len(others) == len(s.Reservations) {
		return s
	}
	return NewQuotaState(s.Quotas, others, s.Uncounted)
}

// WithoutJob is reservations without the one of the TrainJob key
// ("namespace/name") with uid (QuotaState.Without).
func WithoutJob(reservations []quota.Reservation, key string, uid types.UID) []quota.Reservation {
	out := make([]quota.Reservation, 0, len(reservations))
	for _, r := range reservations {
		if r.TrainJob != key || (r.UID != "" && r.UID != uid) {
			out = append(out, r)
		}
	}
	return out
}

// Uncounted is, by ResourceQuota name, what the quota's status.used as
// given counts of pods that exist but that its controller's last count
// missed (the QuotaReservation's spec.uncounted, added to status.used by
// reservations.ReadState): shown in input.quotas[].demand[].uncounted so a
// message can say why status.used exceeds what kubectl shows.
type Uncounted map[string]corev1.ResourceList

// quota returns what the reservations hold of quotas[i].
func (s *QuotaState) quota(i int) *reservedOfQuota {
	s.once.Do(s.build)
	return &s.of[i]
}

// held returns, per quota, what the reservations hold of each resource name
// (quota.Reserved): what input.job.objects compares object counts with.
func (s *QuotaState) held() []map[corev1.ResourceName]*quota.Reserved {
	s.once.Do(s.build)
	out := make([]map[corev1.ResourceName]*quota.Reserved, len(s.of))
	for i := range s.of {
		out[i] = s.of[i].held
	}
	return out
}

func (s *QuotaState) build() {
	s.of = make([]reservedOfQuota, len(s.Quotas))
	for i := range s.Quotas {
		q := &s.Quotas[i]
		held, by := reservedFor(q, s.Reservations)
		reserved := corev1.ResourceList{}
		for name, sum := range held {
			reserved[name] = sum.Total
		}
		out := reservedOfQuota{held: held, reserved: resourcesOf(reserved), reservedBy: list(by), names: map[corev1.ResourceName]*heldPart{}}
		out.reservedTerm, out.reservedByTerm = quantities(out.reserved), stringList(out.reservedBy)
		for name := range q.Spec.Hard {
			if _, res, ok := quota.ChargedName(name); ok {
				out.names[name] = heldPartOf(res, held[name])
			}
		}
		s.of[i] = out
	}
}

// heldPartOf is what reservations hold of a quota resource name of resource res.
func heldPartOf(res string, held *quota.Reserved) *heldPart {
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

// reservedFor is what reservations hold of quota q per resource name, and the
// reservations that hold any of it, in the order given (input.quotas[].reservedBy).
func reservedFor(q *corev1.ResourceQuota, reservations []quota.Reservation) (map[corev1.ResourceName]*quota.Reserved, []string) {
	held := quota.ReservedOf(q, reservations)
	holding := map[string]bool{}
	for _, h := range held {
		for _, b := range h.By {
			holding[b.TrainJob] = true
		}
	}
	var by []string
	for _, h := range reservations {
		if holding[h.TrainJob] {
			by = append(by, h.TrainJob)
			delete(holding, h.TrainJob) // a job listed twice is named once
		}
	}
	return held, by
}
