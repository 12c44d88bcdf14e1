// Package trainjob serves mpiguard's admission webhooks for Kubeflow Trainer
// TrainJobs. Only MPI TrainJobs (their runtime has mlPolicy.mpi) are governed;
// every other TrainJob is allowed untouched, after one cached runtime lookup.
package trainjob

import (
	"context"
	"fmt"
	"net/http"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Paths at which the webhooks are served; config/webhook is generated from the markers below.
const (
	ValidatePath = "/validate-trainer-kubeflow-org-v1alpha1-trainjob"
)

// +kubebuilder:webhook:path=/validate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create;update,versions=v1alpha1,name=vtrainjob.mpiguard.io,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=clustertrainingruntimes;trainingruntimes,verbs=get;list;watch

// Options configures the TrainJob webhooks.
type Options struct{}

// SetupWithManager registers the TrainJob webhooks on the manager's webhook server.
func SetupWithManager(_ context.Context, mgr ctrl.Manager, _ Options) error {
	v := &Validator{
		Runtimes: RuntimeGetter{Reader: mgr.GetClient()},
		decoder:  admission.NewDecoder(mgr.GetScheme()),
	}
	mgr.GetWebhookServer().Register(ValidatePath, &webhook.Admission{Handler: v})
	return nil
}

// Validator is the validating TrainJob webhook.
type Validator struct {
	Runtimes RuntimeGetter
	decoder  admission.Decoder
}

// Handle decodes the TrainJob, builds its typed view and validates it.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	job := &trainer.TrainJob{}
	if err := v.decoder.Decode(req, job); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding TrainJob: %w", err))
	}
	rt, err := v.Runtimes.Get(ctx, job)
	if err != nil {
		// Never a silent allow: a TrainJob whose runtime cannot be read is not evaluated.
		return admission.Errored(http.StatusForbidden, err)
	}
	if !rt.IsMPI() {
		return admission.Allowed("")
	}
	if errs := validateMPI(job, rt); len(errs) > 0 {
		return admission.Denied(errs.ToAggregate().Error())
	}
	return admission.Allowed("")
}
