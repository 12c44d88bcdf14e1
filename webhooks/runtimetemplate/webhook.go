// Package runtimetemplate serves the validating webhook for ClusterTrainingRuntime
// and TrainingRuntime templates with an MPI policy: it decodes the runtime,
// judges it with runtimes/template (what the Trainer's own webhook does not
// check) and answers; unlike upstream, it checks updates too.
package runtimetemplate

import (
	"context"
	"fmt"
	"net/http"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/runtimes/template"
)

// Paths at which the webhook is served; config/webhook is generated from the markers below.
const (
	ClusterTrainingRuntimePath = "/validate-mpiguard-trainer-kubeflow-org-v1alpha1-clustertrainingruntime"
	TrainingRuntimePath        = "/validate-mpiguard-trainer-kubeflow-org-v1alpha1-trainingruntime"
)

// +kubebuilder:webhook:path=/validate-mpiguard-trainer-kubeflow-org-v1alpha1-clustertrainingruntime,mutating=false,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=clustertrainingruntimes,verbs=create;update,versions=v1alpha1,name=vclustertrainingruntime.mpiguard.io,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:webhook:path=/validate-mpiguard-trainer-kubeflow-org-v1alpha1-trainingruntime,mutating=false,failurePolicy=fail,sideEffects=None,groups=trainer.kubeflow.org,resources=trainingruntimes,verbs=create;update,versions=v1alpha1,name=vtrainingruntime.mpiguard.io,admissionReviewVersions=v1,timeoutSeconds=5

// Options configures the runtime template webhook.
type Options struct {
	// Enabled serves the webhook.
	Enabled bool
}

// DefaultOptions serves the webhook.
func DefaultOptions() Options { return Options{Enabled: true} }

// SetupWithManager registers the webhook on the manager's webhook server.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if !opts.Enabled {
		return nil
	}
	d := admission.NewDecoder(mgr.GetScheme())
	mgr.GetWebhookServer().Register(ClusterTrainingRuntimePath, &webhook.Admission{Handler: &Validator{decoder: d}})
	mgr.GetWebhookServer().Register(TrainingRuntimePath, &webhook.Admission{Handler: &Validator{decoder: d}})
	return nil
}

// Validator validates both runtime kinds: they share TrainingRuntimeSpec.
type Validator struct {
	decoder admission.Decoder
}

// NewValidator returns a Validator that decodes with d.
func NewValidator(d admission.Decoder) *Validator { return &Validator{decoder: d} }

// Handle decodes the runtime, validates its MPI template and answers with
// denials and admission warnings.
func (v *Validator) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	meta, spec, err := v.decode(req, false)
	if err != nil {
		return refused(err)
	}
	errs, warnings := template.Validate(meta, spec)
	if req.Operation == admissionv1.Update && len(errs) > 0 {
		oldMeta, oldSpec, err := v.decode(req, true)
		if err != nil {
			return refused(err)
		}
		// Updates that change neither spec nor constraints (finalizers, labels) and
		// updates of an object being deleted must pass, or a runtime created before
		// this webhook could never be cleaned up; problems become warnings.
		sameConstraints := equality.Semantic.DeepEqual(template.ConstraintAnnotations(oldMeta), template.ConstraintAnnotations(meta))
		if meta.DeletionTimestamp != nil || (sameConstraints && equality.Semantic.DeepEqual(oldSpec, spec)) {
			warnings = append(errs, warnings...)
			errs = nil
		}
	}
	resp := admission.Allowed("")
	audit := map[string]string{"verdict": "allowed"}
	if len(errs) > 0 {
		resp = admission.Denied(pipeline.WithDocsLink(template.Policy, template.Refusal(req.Kind.Kind, req.Name, errs)))
		audit = map[string]string{"verdict": "denied", "denied-by": template.Policy}
	}
	if len(warnings) > 0 {
		audit["warned-by"] = template.Policy
	}
	resp.AuditAnnotations = audit
	return resp.WithWarnings(template.WarningLines(warnings)...)
}

// refused answers a runtime that cannot be decoded.
func refused(err error) admission.Response {
	resp := admission.Errored(http.StatusBadRequest, err)
	resp.AuditAnnotations = map[string]string{"verdict": "refused"}
	return resp
}

// decode returns the metadata and spec of the (old) object: both kinds share
// TrainingRuntimeSpec, so the rules see one typed view.
func (v *Validator) decode(req admission.Request, old bool) (*metav1.ObjectMeta, *trainer.TrainingRuntimeSpec, error) {
	raw := req.Object
	if old {
		raw = req.OldObject
	}
	// Before the typed decode (render.ScreenQuantities): a namespace's
	// admins may write TrainingRuntimes.
	if err := render.ScreenQuantities(raw.Raw); err != nil {
		return nil, nil, fmt.Errorf("decoding %s: %w", req.Kind.Kind, err)
	}
	switch req.Kind.Kind {
	case trainer.ClusterTrainingRuntimeKind:
		var rt trainer.ClusterTrainingRuntime
		if err := v.decoder.DecodeRaw(raw, &rt); err != nil {
			return nil, nil, fmt.Errorf("decoding ClusterTrainingRuntime: %w", err)
		}
		return &rt.ObjectMeta, &rt.Spec, nil
	case trainer.TrainingRuntimeKind:
		var rt trainer.TrainingRuntime
		if err := v.decoder.DecodeRaw(raw, &rt); err != nil {
			return nil, nil, fmt.Errorf("decoding TrainingRuntime: %w", err)
		}
		return &rt.ObjectMeta, &rt.Spec, nil
	default:
		return nil, nil, fmt.Errorf("unexpected kind %q: this webhook validates ClusterTrainingRuntime and TrainingRuntime", req.Kind.Kind)
	}
}
