package trainjob

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/internal/pipeline"
)

// reinvocationPolicy IfNeeded: Kueue's mutating webhook (v0.17+) also acts
// on every create (it suspends the job and adds its runtime patch); if it
// runs after mpiguard's, mpiguard runs again on its result (docs/kueue.md).
// +kubebuilder:webhook:path=/mutate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create;update,versions=v1alpha1,name=mtrainjob.mpiguard.io,admissionReviewVersions=v1,timeoutSeconds=5,reinvocationPolicy=IfNeeded

// Mutator is the mutating TrainJob webhook: it applies the policies' mutations
// (the default deadline, mpiguard's own spec.runtimePatches entry) and, on
// UPDATE, puts back the stored ones the update leaves out (the pipeline
// decides both). It never denies: the validating webhook decides on the
// mutated object.
type Mutator struct{ *admitter }

// Handle implements admission.Handler.
func (m Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	r, done := decode(req)
	if done != nil {
		return withDefaultAudit(*done)
	}
	v, err := m.pipeline.Run(ctx, m.cluster, r, pipeline.Mutate)
	if err != nil {
		// An update refused here never reaches the validating webhook.
		resp := withDefaultAudit(*refused(err))
		m.reportDenied(r, resp)
		return resp
	}
	if !v.Governed {
		return withDefaultAudit(admission.Allowed(""))
	}
	if len(v.Patch) == 0 {
		return withMutated(admission.Allowed(""), false)
	}
	return withMutated(admission.Patched("", v.Patch...), true)
}
