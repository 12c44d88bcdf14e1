package trainjob

import (
	"context"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
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
	d, err := v.engine.Decide(ctx, ev.request)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	warns := warnings(d.Warnings())
	if !d.Allowed {
		return admission.Denied(denialMessage(ev.job, d.Denials())).WithWarnings(warns...)
	}
	return admission.Allowed("").WithWarnings(warns...)
}
