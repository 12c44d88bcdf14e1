package trainjob

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/internal/jobstate"
	"github.com/mpiguard/mpiguard/internal/pipeline"
)

// +kubebuilder:webhook:path=/validate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=false,failurePolicy=fail,sideEffects=NoneOnDryRun,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create;update,versions=v1alpha1,name=vtrainjob.mpiguard.io,admissionReviewVersions=v1,timeoutSeconds=10

// Validator is the validating TrainJob webhook: it runs every policy on what
// the TrainJob will really create and denies, warns or allows. A job that
// starts pods is allowed only once its quota reservation is written (reserve.go).
type Validator struct{ *admitter }

// Handle implements admission.Handler.
func (v Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	r, done := decode(req)
	if done != nil {
		return withDefaultAudit(*done)
	}
	resp := withDefaultAudit(v.decide(ctx, req, r))
	v.reportDenied(r, resp)
	return resp
}

// decide answers a decoded request: prepared once (read, rendered, its
// policy input built), then judged, through the quota reservation
// transaction when it starts pods.
func (v Validator) decide(ctx context.Context, req admission.Request, r *pipeline.Request) admission.Response {
	prepared, err := v.pipeline.Prepare(ctx, v.cluster, r, pipeline.Validate)
	switch {
	case err != nil:
		return *refused(err)
	case !prepared.Governed:
		return admission.Allowed("")
	case jobstate.StartsPods(r.OldTrainJob, r.TrainJob):
		return v.decideReserving(ctx, req, r, prepared)
	}
	evaluation, err := v.pipeline.Judge(ctx, prepared, nil)
	if err != nil {
		return *refused(err)
	}
	return answer(evaluation)
}
