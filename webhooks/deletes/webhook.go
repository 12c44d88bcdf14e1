// Package deletes serves the webhook that puts deletions on record: every
// DELETE of a TrainJob, TrainingRuntime or ClusterTrainingRuntime reaches it,
// and it writes who deleted what, and what a TrainJob held (its phase, its
// quota reservation entry), to the decision log. It only observes: it always
// answers allowed, and its configuration has failurePolicy Ignore, so an
// mpiguard outage never blocks a delete (the delete is then missing from the
// decision log, and still in the apiserver's audit log).
package deletes

import (
	"context"
	"encoding/json"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/engine"
)

// Path is where the webhook is served; config/webhook is generated from the marker.
const Path = "/observe-trainer-kubeflow-org-v1alpha1-delete"

// sideEffects None: the decision log is no API object, so dry-run deletes are
// sent too and recorded as dry runs.
// +kubebuilder:webhook:path=/observe-trainer-kubeflow-org-v1alpha1-delete,mutating=false,failurePolicy=ignore,sideEffects=None,groups=trainer.kubeflow.org,resources=trainjobs;trainingruntimes;clustertrainingruntimes,verbs=delete,versions=v1alpha1,name=odelete.mpiguard.io,admissionReviewVersions=v1,timeoutSeconds=2

// Recorder writes a deletion to the decision log (engine.Engine).
type Recorder interface {
	RecordDeletion(engine.Deletion) error
}

// Reservations finds the entry a TrainJob holds in its namespace's
// QuotaReservation (admit.Admitter, from the cache: no apiserver
// round trip before the answer).
type Reservations interface {
	Entry(ctx context.Context, job *trainer.TrainJob) (*v1alpha1.ReservationEntry, error)
}

// Observer is the deletion webhook.
type Observer struct {
	Log          Recorder
	Reservations Reservations // nil: entries are not looked up
}

// SetupWithManager registers the webhook on the manager's webhook server.
func SetupWithManager(mgr ctrl.Manager, o *Observer) error {
	if o == nil || o.Log == nil {
		return fmt.Errorf("the deletion webhook needs a decision log")
	}
	mgr.GetWebhookServer().Register(Path, &webhook.Admission{Handler: o})
	return nil
}

// Handle records the deletion and allows it. Whatever it cannot read (an
// object it cannot decode, a reservation it cannot look up) is left out of
// the entry, never turned into a refusal.
func (o *Observer) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp := admission.Allowed("")
	if req.Operation != admissionv1.Delete {
		return resp
	}
	d := engine.Deletion{
		User: req.UserInfo.Username, Kind: req.Kind.Kind, Namespace: req.Namespace,
		Name: req.Name, DryRun: ptr.Deref(req.DryRun, false),
	}
	if d.Kind == trainer.TrainJobKind {
		d.Phase, d.Reservation = o.held(ctx, req)
	}
	if err := o.Log.RecordDeletion(d); err != nil {
		log.FromContext(ctx).Error(err, "writing a deletion to the decision log", "kind", d.Kind, "namespace", d.Namespace, "name", d.Name)
	}
	resp.AuditAnnotations = AuditAnnotations(d)
	return resp
}

// held is the phase and reservation entry of the TrainJob a request deletes.
func (o *Observer) held(ctx context.Context, req admission.Request) (string, *v1alpha1.ReservationEntry) {
	var job trainer.TrainJob
	if len(req.OldObject.Raw) == 0 || json.Unmarshal(req.OldObject.Raw, &job) != nil {
		return "", nil
	}
	if job.Namespace == "" {
		job.Namespace = req.Namespace
	}
	phase := Phase(&job)
	if o.Reservations == nil {
		return phase, nil
	}
	entry, err := o.Reservations.Entry(ctx, &job)
	if err != nil {
		log.FromContext(ctx).Error(err, "looking up the reservation of a deleted TrainJob", "namespace", job.Namespace, "name", job.Name)
		return phase, nil
	}
	return phase, entry
}

// Phase is a TrainJob's phase as its status and spec say: Complete, Failed,
// Suspended or Running (neither finished nor suspended; its pods may not
// exist yet).
func Phase(job *trainer.TrainJob) string {
	switch {
	case meta.IsStatusConditionTrue(job.Status.Conditions, trainer.TrainJobComplete):
		return trainer.TrainJobComplete
	case meta.IsStatusConditionTrue(job.Status.Conditions, trainer.TrainJobFailed):
		return trainer.TrainJobFailed
	case ptr.Deref(job.Spec.Suspend, false):
		return trainer.TrainJobSuspended
	}
	return "Running"
}

// AuditAnnotations are what the apiserver's audit log shows of a deletion
// (keys prefixed with the webhook's name by the apiserver).
func AuditAnnotations(d engine.Deletion) map[string]string {
	out := map[string]string{"verdict": "allowed", "recorded": "true"}
	if d.Phase != "" {
		out["phase"] = d.Phase
	}
	if d.Kind == trainer.TrainJobKind {
		out["reservation"] = "none"
		if d.Reservation != nil {
			out["reservation"] = "held"
		}
	}
	return out
}
