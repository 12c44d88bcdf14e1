package trainjob

import (
	"context"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/policies/engine"
)

// +kubebuilder:webhook:path=/validate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=false,failurePolicy=fail,sideEffects=NoneOnDryRun,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create;update,versions=v1alpha1,name=vtrainjob.mpiguard.io,admissionReviewVersions=v1,timeoutSeconds=10

// Validator is the validating TrainJob webhook: it runs every policy on what
// the TrainJob will really create and denies, warns or allows. A job that
// starts pods is allowed only once its quota reservation is written (reserve.go).
type Validator struct{ *admitter }

// Handle implements admission.Handler.
func (v Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	ev, done := v.governed(ctx, req)
	if done != nil {
		return *done
	}
	if ev.startsPods() {
		return v.decideReserving(ctx, req, ev)
	}
	ev.request.RecordLater = ev.staysSuspended()
	d, err := v.engine.Decide(ctx, ev.request)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if ev.request.RecordLater {
		deferDenials(d)
		v.engine.Record(ev.request, d)
	}
	warns := warnings(d.Warnings())
	if !d.Allowed {
		return admission.Denied(denialMessage(ev.job, d.Denials())).WithWarnings(warns...)
	}
	return admission.Allowed("").WithWarnings(warns...)
}

// deferDenials turns the denials of an update to a job that stays suspended
// into warnings that say so. Such a job runs nothing, and its resume is
// decided in full (startsPods), so what a policy denies is denied then. Until
// then nothing blocks updates of a suspended job: Kueue, after suspending a
// job it preempts, resets its own runtime patch in a second update, which a
// policy tightened since the job was admitted must not refuse. The user hears
// now what the resume will be told.
//
// Except an entry posing as mpiguard's (policy mpiguard-entry): once stored,
// the resume would compare against it and take it for mpiguard's own.
func deferDenials(d *engine.Decision) {
	d.Allowed = true
	for i := range d.Violations {
		v := &d.Violations[i]
		switch {
		case v.Action != engine.EnforceDeny:
		case v.Policy == mpiguardEntryPolicy:
			d.Allowed = false
		default:
			v.Action = engine.EnforceWarn
			v.Message = "denied when the job is resumed: " + v.Message
		}
	}
}

// mpiguardEntryPolicy judges entries under mpiguard's runtime-patch manager.
const mpiguardEntryPolicy = "mpiguard-entry"
