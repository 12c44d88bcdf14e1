package networkpolicies

import (
	"context"
	"encoding/json"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainjobutil "github.com/kubeflow/trainer/v2/pkg/util/trainjob"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event reasons on the TrainJob.
const (
	ReasonCreated           = "NetworkPolicyCreated"
	ReasonUpdated           = "NetworkPolicyUpdated"
	ReasonRepaired          = "NetworkPolicyRepaired"
	ReasonDeleted           = "NetworkPolicyDeleted"
	ReasonConflict          = "NetworkPolicyConflict"
	ReasonInvalidAnnotation = "InvalidNetworkPolicyAnnotation"
	ReasonRuntimeNotFound   = "NetworkPolicyRuntimeNotFound"
)

var actionReasons = map[string]string{
	ActionCreated:  ReasonCreated,
	ActionUpdated:  ReasonUpdated,
	ActionRepaired: ReasonRepaired,
	ActionDeleted:  ReasonDeleted,
}

// Reconcile brings the NetworkPolicy named after one TrainJob to its template.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var job trainer.TrainJob
	if err := r.client.Get(ctx, req.NamespacedName, &job); err != nil {
		if apierrors.IsNotFound(err) {
			// The policy goes with the job through its owner reference.
			r.applied.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !job.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if trainjobutil.IsManagedByExternalController(&job) {
		// spec.managedBy hands the job to another controller (Kueue's
		// MultiKueue runs a copy on a worker cluster, where mpiguard writes
		// the copy's policy): the Trainer here creates no pod of it, so there
		// is nothing to isolate. managedBy is immutable, so the job never had
		// a policy of ours. The Trainer's own test, checked here rather than
		// through mpiguard's pipeline: this package imports nothing else of
		// mpiguard's.
		r.applied.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}

	rt, err := lookupRuntime(ctx, r.client, &job)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !rt.found {
		// Without the runtime we cannot tell whether the job is MPI. Keep any policy
		// it has (removing isolation because a runtime vanished would fail open);
		// the runtime watch re-queues the job when the runtime appears.
		PolicySkipped.WithLabelValues(SkipRuntimeNotFound).Inc()
		r.recorder.Eventf(&job, nil, corev1.EventTypeWarning, ReasonRuntimeNotFound, "Reconcile",
			"%s referenced by spec.runtimeRef does not exist, so mpiguard cannot tell whether this is an MPI job and writes no NetworkPolicy; create the runtime or fix spec.runtimeRef",
			rt.source.what)
		return ctrl.Result{}, nil
	}

	existing, err := r.storedPolicy(ctx, r.client, &job)
	if err != nil {
		return ctrl.Result{}, err
	}

	var want *networkingv1.NetworkPolicy
	if rt.mpi {
		settings, err := r.settingsFor(ctx, &job, rt)
		if err != nil {
			return ctrl.Result{}, err
		}
		want = desiredPolicy(&job, settings, r.opts)
	}

	if existing != nil && ownershipOf(existing, &job) == foreign {
		if want != nil {
			PolicySkipped.WithLabelValues(SkipConflict).Inc()
			r.recorder.Eventf(&job, existing, corev1.EventTypeWarning, ReasonConflict, "Apply",
				"NetworkPolicy %s/%s already exists and is not managed by mpiguard (no %s=%s label, no controller reference to this TrainJob), so the job runs without its %q policy; rename or delete that NetworkPolicy",
				existing.Namespace, existing.Name, ManagedByLabel, ManagedByValue, want.Labels[TemplateLabel])
		}
		return ctrl.Result{}, nil
	}

	if want == nil { // not MPI, or template off
		r.applied.forget(req.NamespacedName)
		if existing == nil {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, r.deletePolicy(ctx, &job, existing, rt.mpi)
	}
	return ctrl.Result{}, r.applyPolicy(ctx, &job, existing, want)
}

// settingsFor resolves the job's settings and reports every bad annotation as a
// Warning event on the job, so whoever looks at the job sees why its policy is
// not what the annotation asked for.
func (r *Reconciler) settingsFor(ctx context.Context, job *trainer.TrainJob, rt runtimeInfo) (Settings, error) {
	var ns corev1.Namespace
	if err := r.client.Get(ctx, client.ObjectKey{Name: job.Namespace}, &ns); client.IgnoreNotFound(err) != nil {
		return Settings{}, fmt.Errorf("reading Namespace %q: %w", job.Namespace, err)
	}
	settings, problems := resolveSettings(r.opts,
		annotated{what: fmt.Sprintf("Namespace %q", job.Namespace), annotations: ns.Annotations}, rt.source)
	for _, p := range problems {
		r.recorder.Eventf(job, nil, corev1.EventTypeWarning, ReasonInvalidAnnotation, "Reconcile", "%s", p.Error())
	}
	return settings, nil
}

func (r *Reconciler) storedPolicy(ctx context.Context, c client.Reader, job *trainer.TrainJob) (*networkingv1.NetworkPolicy, error) {
	var p networkingv1.NetworkPolicy
	if err := c.Get(ctx, client.ObjectKeyFromObject(job), &p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading NetworkPolicy %s/%s: %w", job.Namespace, job.Name, err)
	}
	return &p, nil
}

// applyPolicy writes want unless the stored policy already matches, and names
// the write created, updated or repaired.
func (r *Reconciler) applyPolicy(ctx context.Context, job *trainer.TrainJob, existing, want *networkingv1.NetworkPolicy) error {
	fp := fingerprint(want)
	if existing != nil && inSync(existing, want) {
		r.applied.record(job, fp)
		return nil
	}

	action := ActionUpdated
	if existing == nil {
		action = ActionCreated
	}
	if r.applied.applied(job, fp) {
		// We wrote exactly this before, yet the cache shows it missing or
		// different. Confirm against the apiserver: the cache may just lag our own
		// write, which is no drift.
		live, err := r.storedPolicy(ctx, r.apiReader, job)
		if err != nil {
			return err
		}
		if live != nil && inSync(live, want) {
			return nil
		}
		action = ActionRepaired
	}

	ac, err := applyConfiguration(want)
	if err != nil {
		return err
	}
	if err := r.client.Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying NetworkPolicy %s/%s: %w", want.Namespace, want.Name, err)
	}
	r.applied.record(job, fp)
	PolicyChanges.WithLabelValues(action).Inc()
	r.recorder.Eventf(job, want, corev1.EventTypeNormal, actionReasons[action], "Apply",
		"NetworkPolicy %s/%s %s from template %q", want.Namespace, want.Name, action, want.Labels[TemplateLabel])
	return nil
}

// deletePolicy removes a policy this controller owns once the job no longer
// wants one: the template became off, or the runtime stopped being MPI.
func (r *Reconciler) deletePolicy(ctx context.Context, job *trainer.TrainJob, existing *networkingv1.NetworkPolicy, mpi bool) error {
	uid := existing.UID
	if err := r.client.Delete(ctx, existing, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		if apierrors.IsConflict(err) { // replaced meanwhile; the new one's event re-queues us
			return nil
		}
		return fmt.Errorf("deleting NetworkPolicy %s/%s: %w", existing.Namespace, existing.Name, err)
	}
	why := fmt.Sprintf("template is %q", TemplateOff)
	if !mpi {
		why = "runtime no longer has mlPolicy.mpi"
	}
	PolicyChanges.WithLabelValues(ActionDeleted).Inc()
	r.recorder.Eventf(job, existing, corev1.EventTypeNormal, ReasonDeleted, "Delete",
		"NetworkPolicy %s/%s deleted: %s", existing.Namespace, existing.Name, why)
	return nil
}

// applyConfiguration turns the typed policy into the apply configuration the
// client sends. Going through JSON keeps one source of truth (the typed object
// the unit tests pin) and sends only the fields we set.
func applyConfiguration(p *networkingv1.NetworkPolicy) (*networkingv1ac.NetworkPolicyApplyConfiguration, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding NetworkPolicy %s/%s: %w", p.Namespace, p.Name, err)
	}
	ac := &networkingv1ac.NetworkPolicyApplyConfiguration{}
	if err := json.Unmarshal(data, ac); err != nil {
		return nil, fmt.Errorf("converting NetworkPolicy %s/%s to an apply configuration: %w", p.Namespace, p.Name, err)
	}
	return ac, nil
}
