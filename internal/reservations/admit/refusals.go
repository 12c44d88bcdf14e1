package admit

import (
	"fmt"

	"github.com/mpiguard/mpiguard/internal/engine"
)

// Policy names denials that come from recording the reservation, not from a
// policy.
const Policy = "quota-reservation"

// refuse answers d, a job the policies judged, with a reason of the
// transaction's: msg joins its decision's denials and nothing is reserved.
func (d *waiting) refuse(msg string) {
	dec := *d.evaluation.Decision
	dec.Allowed = false
	dec.Violations = append(dec.Violations[:len(dec.Violations):len(dec.Violations)],
		engine.Violation{Policy: Policy, Action: engine.EnforceDeny, Field: "spec.trainer", Message: msg})
	v := *d.evaluation
	v.Decision = &dec
	d.evaluation = &v
	d.answer()
}

// notRecorded is the reason of a request whose reservation could not be
// written: nothing reserved, retry.
func notRecorded(ns string, rounds int, err error) string {
	return fmt.Sprintf("mpiguard could not record the quota this TrainJob needs in namespace %s (%d rounds; last: %v), so nothing was reserved; retry the request",
		ns, rounds, err)
}

// tooManyUnconfirmed is the reason of a request that would add an entry to a
// namespace that already has as many held on trust as --max-unconfirmed-reservations
// allows: creates admitted whose TrainJob has not appeared, resumes not
// landed. A namespace cannot be filled with reservations that never
// materialise (a burst of forged reviews, or creates the apiserver refuses
// after admission); they are released after the grace, and then this
// request, retried, is decided.
func (a *Admitter) tooManyUnconfirmed(ns string, n int) string {
	unconfirmedRefusals.WithLabelValues(ns).Inc()
	return fmt.Sprintf("namespace %s already holds %d quota reservations of TrainJobs admitted but not yet created or resumed (limit %d; each is released %s after admission if its create or resume never lands), so nothing was reserved; retry in a few seconds. If this persists, admission reviews not followed by a create are reaching mpiguard: tell the platform team",
		ns, n, a.maxUnconfirmed, a.grace)
}

// full is the reason of a request whose entry would not fit its namespace's
// QuotaReservation: as many jobs are admitted there and wait for their pods
// as one object keeps (MaxEntries).
func full(ns string, n int) string {
	fullRefusals.WithLabelValues(ns).Inc()
	return fmt.Sprintf("namespace %s already holds %d quota reservations of admitted TrainJobs whose pods do not exist yet, the most mpiguard keeps for one namespace, so nothing was reserved; retry once some of those jobs' pods exist (each entry goes as soon as they do)",
		ns, n)
}
