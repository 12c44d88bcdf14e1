package trainjob

import (
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/jobstate"
	"github.com/mpiguard/mpiguard/internal/pipeline"
)

// A denied UPDATE of a TrainJob is usually made by a controller (Kueue
// resuming a job it admitted, another tool patching it), not by a person who
// reads the answer: the reason would be only in that controller's log and in
// mpiguard's decision log, and the controller retries with backoff forever.
// A Warning event on the TrainJob carries the denial, so `kubectl describe
// trainjob` shows it. The recorder (client-go's events.k8s.io recorder)
// aggregates repeats: the same denial of the same stored object becomes one
// event whose series counts the attempts.
//
// The events are written to the TrainJob's namespace, any namespace.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// EventsController is the reporting controller of the webhooks' events.
const EventsController = "mpiguard-admission"

// Reasons of the Warning events on a TrainJob whose UPDATE mpiguard refused.
const (
	// ReasonUpdateDenied: the policies denied the update (or it cannot be
	// judged for a reason of the job's or the cluster's: a missing runtime, a
	// job that does not render). The note is the denial.
	ReasonUpdateDenied = "UpdateDenied"
	// ReasonUpdateNotDecided: mpiguard could not decide the update (a policy
	// failed, the quota state could not be read or written): retrying may
	// succeed.
	ReasonUpdateNotDecided = "UpdateNotDecided"
)

// Actions of those events: what was refused.
const (
	actionResume = "Resume" // the update resumes a suspended job (Kueue's admission)
	actionUpdate = "Update"
)

// reportDenied records a Warning event on the TrainJob of r, a decoded
// request, when resp refuses it and it is an UPDATE that is not a dry run:
// a dry run has no side effects (the webhooks declare sideEffects
// NoneOnDryRun), and a denied CREATE leaves no object to put an event on
// (its submitter has the answer).
func (a *admitter) reportDenied(r *pipeline.Request, resp admission.Response) {
	if a.recorder == nil || resp.Allowed || r.Operation != engine.Update || r.DryRun || r.OldTrainJob == nil {
		return
	}
	reason, message := ReasonUpdateDenied, ""
	if resp.Result != nil {
		message = resp.Result.Message
		if resp.Result.Code != 0 && resp.Result.Code != http.StatusForbidden {
			reason = ReasonUpdateNotDecided
		}
	}
	action, what := actionUpdate, "an update"
	if jobstate.Resumes(r.OldTrainJob, r.TrainJob) { // a MultiKueue job's resume starts no pod here, and is still one
		action, what = actionResume, "the resume"
	}
	note := fmt.Sprintf("mpiguard denied %s of this TrainJob by %s: %s", what, r.User, message)
	if reason == ReasonUpdateNotDecided {
		note = fmt.Sprintf("mpiguard refused %s of this TrainJob by %s without deciding it: %s", what, r.User, message)
	}
	a.recorder.Eventf(r.OldTrainJob, nil, corev1.EventTypeWarning, reason, action, "%s", pipeline.EventNote(note, "in the answer to the update and in mpiguard's decision log"))
}
