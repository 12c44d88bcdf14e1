package trainjob

import (
	"context"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// +kubebuilder:webhook:path=/validate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create;update,versions=v1alpha1,name=vtrainjob.mpiguard.io,admissionReviewVersions=v1,timeoutSeconds=5

// Validator is the validating TrainJob webhook: it runs every policy on what
// the TrainJob will really create and denies, warns or allows.
type Validator struct{ *admitter }

// Handle implements admission.Handler.
func (v Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	ev, done := v.governed(ctx, req)
	if done != nil {
		return *done
	}
	// Only a job that starts pods in a namespace with quotas needs the ledger;
	// elsewhere submits do not wait for each other.
	ledgered := ev.startsPods() && len(ev.request.Quotas) > 0
	if ledgered {
		unlock := v.ledger.Lock(ev.job.Namespace)
		defer unlock()
		reserved, err := v.ledger.Reserved(ctx, ev.job, v.pendingViews(ev.nsc))
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		ev.request.Reserved = reserved
	}
	d, err := v.engine.Decide(ctx, ev.request)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	warns := warnings(d.Warnings())
	if !d.Allowed {
		return admission.Denied(denialMessage(ev.job, d.Denials())).WithWarnings(warns...)
	}
	if ledgered && !ev.request.DryRun {
		v.ledger.Admitted(ev.job, ev.request.View)
	}
	return admission.Allowed("").WithWarnings(warns...)
}
