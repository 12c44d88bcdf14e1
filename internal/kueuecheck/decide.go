package kueuecheck

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/internal/pipeline"
)

// ControllerName is the spec.controllerName of the AdmissionChecks mpiguard
// answers. It is also mpiguard's runtime-patch manager (engine.AdmissionManager).
const ControllerName = "mpiguard.io/admission"

// CheckState is the state mpiguard gives one check of a Workload, and why.
type CheckState struct {
	State   kueue.CheckState
	Message string
}

// Messages of the outcomes that are not a denial.
const (
	msgAllowed    = "mpiguard admits the job as it will run: every policy passes with the flavors Kueue assigned, and the namespace quota it needs is reserved for its start"
	msgUngoverned = "no mpiguard policy applies: not an MPI TrainJob, or its namespace is exempt (mpiguard.io/exempt=true)"
	// msgDispatched answers the Workload MultiKueue makes on a worker
	// cluster (no owner, its origin label): MultiKueue creates the job's
	// copy here only once this Workload is admitted, so there is nothing to
	// judge yet; the webhooks judge the copy.
	msgDispatched = "dispatched here by MultiKueue (origin %q): its job is not on this cluster yet (MultiKueue creates the copy once this Workload is admitted), so this check has nothing to judge; if it is an MPI TrainJob, mpiguard's webhooks judge the copy, quota included, and reserve its namespace quota when it is created and resumed"
	// msgDeactivated follows the denial on a rejected Workload's check once
	// Kueue has deactivated it.
	msgDeactivated = "\nmpiguard rejected this Workload, and Kueue deactivated it (spec.active: false). Fix the cause, then set spec.active: true to queue it again: mpiguard judges it afresh."
)

// dispatchedBy returns the MultiKueue origin of a Workload MultiKueue made on
// this worker cluster for a job of another: it carries the origin label and
// no owner yet (Kueue gives it the copy as owner once the copy exists).
func dispatchedBy(wl *kueue.Workload) (string, bool) {
	origin, ok := wl.Labels[kueue.MultiKueueOriginLabel]
	return origin, ok && metav1.GetControllerOf(wl) == nil
}

// decide turns the evaluation on the resume Kueue is about to make into the
// check's outcome. idle is the same job judged against an idle namespace
// (its ResourceQuotas with nothing used, nothing reserved), nil when evaluation
// allows: a denial it does not repeat is the quota being busy, which waiting
// can fix (Retry); any other is not (Rejected).
func decide(evaluation, idle *pipeline.Evaluation) CheckState {
	switch {
	case !evaluation.Governed:
		return CheckState{State: kueue.CheckStateReady, Message: msgUngoverned}
	case evaluation.Allowed():
		return CheckState{State: kueue.CheckStateReady, Message: msgAllowed}
	case idle != nil && idle.Allowed():
		return CheckState{State: kueue.CheckStateRetry, Message: pipeline.Cut(evaluation.DenialMessage(), maxMessage, "…")}
	}
	return CheckState{State: kueue.CheckStateRejected, Message: pipeline.Cut(evaluation.DenialMessage(), maxMessage, "…")}
}

// maxMessage is the Workload CRD's bound on a check's message
// (status.admissionChecks[].message, maxLength 32768).
const maxMessage = 32768

// requeueAfter is how long Kueue waits before it offers a Workload whose
// check said Retry for the retryCount-th time again: base doubled per
// earlier retry, at most limit. Without it Kueue requeues at once, and a
// namespace whose quota stays busy would have its Workload reserved and
// released in a tight loop.
func requeueAfter(retryCount int32, base, limit time.Duration) time.Duration {
	d := base
	for i := int32(0); i < retryCount && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
