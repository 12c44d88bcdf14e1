package trainjob

import (
	"context"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// +kubebuilder:webhook:path=/mutate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create;update,versions=v1alpha1,name=mtrainjob.mpiguard.io,admissionReviewVersions=v1,timeoutSeconds=5,reinvocationPolicy=IfNeeded

// Mutator is the mutating TrainJob webhook: it applies the policies' mutations
// (the default deadline, mpiguard's own spec.runtimePatches entry). It never
// denies: the validating webhook decides on the mutated object.
type Mutator struct{ *admitter }

// Handle implements admission.Handler.
func (m Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	ev, done := m.governed(ctx, req)
	if done != nil {
		return *done
	}
	d, err := m.engine.Mutations(ctx, ev.request)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	ops, err := patchOperations(req.Object.Raw, ev.job, d)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if len(ops) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", ops...)
}
