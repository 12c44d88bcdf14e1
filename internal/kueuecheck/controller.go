package kueuecheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueac "sigs.k8s.io/kueue/pkg/util/admissioncheck"

	"github.com/mpiguard/mpiguard/internal/capacity"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reservations/admit"
)

// RBAC (ClusterRole: Workloads are in every namespace that queues jobs; the
// QuotaReservations it writes are in mpiguard's namespace, reservations/store.go):
//
// The Workloads whose checks it answers, and their check states (server-side
// apply of mpiguard's own entries of status.admissionChecks).
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=get;patch
// Which checks are mpiguard's (spec.controllerName), and their Active condition.
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=admissionchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=admissionchecks/status,verbs=get;patch
// The node labels and tolerations of the flavors Kueue assigned; the
// ClusterQueue (through the LocalQueue) of a Workload Kueue cannot place,
// whose flavors mpiguard judges it on (unplaced.go).
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors;localqueues;clusterqueues,verbs=get;list;watch
// What a decision reads (the webhooks read the same), and the Warning event
// on a TrainJob that must wait or is rejected.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs;clustertrainingruntimes;trainingruntimes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces;resourcequotas;limitranges;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// FieldOwner is the field manager of the check states and conditions
// mpiguard applies.
const FieldOwner = "mpiguard-admission-check"

// Event reasons on the TrainJob of a Workload whose check is not Ready.
const (
	ReasonRetry    = "AdmissionCheckRetry"
	ReasonRejected = "AdmissionCheckRejected"
	// ReasonUnplaceable: Kueue cannot place the job on any flavor of its
	// ClusterQueue, and mpiguard refuses it on each (unplaced.go).
	ReasonUnplaceable = "AdmissionCheckUnplaceable"
)

// Options configures the AdmissionCheck controller.
type Options struct {
	// Enabled runs it when Kueue's CRDs are installed.
	Enabled bool
	// RetryBackoff is how long Kueue waits before it offers a Workload
	// whose check said Retry again, doubled on each further retry up to
	// MaxRetryBackoff.
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration
	// Nodes are the cluster's nodes by shape, kept by an informer
	// (pipeline.WatchNodes); nil: they are listed per decision.
	Nodes *capacity.Index
}

// DefaultOptions are on, with retries after 10 s, 20 s, ... at most 5 min apart.
func DefaultOptions() Options {
	return Options{Enabled: true, RetryBackoff: 10 * time.Second, MaxRetryBackoff: 5 * time.Minute}
}

// ErrNoKueue says Kueue's CRDs are not installed: there is nothing to answer.
var ErrNoKueue = errors.New("the Kueue CRDs (kueue.x-k8s.io/v1beta2 Workload, AdmissionCheck, ResourceFlavor) are not installed; the Kueue admission check is off")

// Reconciler answers mpiguard's checks of Workloads. It runs on the elected
// leader only: one process decides, and its reservations are serialised with
// the webhooks' by the QuotaReservation's resourceVersion.
type Reconciler struct {
	client   client.Client
	cluster  pipeline.ClientCluster
	pipeline *pipeline.Pipeline
	// admitter decides the resume and reserves its quota, as the
	// validating webhook does for the resume itself.
	admitter *admit.Admitter
	recorder events.EventRecorder
	opts     Options
	clock    clock.Clock
	// rejected keeps the message of each Workload this process rejected,
	// by UID, until Kueue has deactivated it: Kueue then resets every check
	// to Pending ("Reset to Pending after eviction. Previously: Rejected"),
	// and the reason is put back (restoreRejection). After a change of
	// leader in between, Kueue's AdmissionCheckRejected event and the
	// TrainJob's still carry it.
	rejected *lru.Cache
}

// rejectedSize bounds the messages kept for restoreRejection.
const rejectedSize = 1024

// SetupWithManager registers the controllers of Workloads and of
// AdmissionChecks. p is the admission pipeline, admitter the quota
// reservation transaction the webhooks share. It returns ErrNoKueue when
// Kueue's CRDs are not installed.
func SetupWithManager(mgr ctrl.Manager, p *pipeline.Pipeline, admitter *admit.Admitter, opts Options) error {
	// Kueue counts requeueAfterSeconds in whole seconds: less than one would
	// requeue a Retry Workload at once, reserving and releasing it in a loop.
	if opts.RetryBackoff < time.Second {
		return fmt.Errorf("kueue retry backoff %s: must be at least 1s", opts.RetryBackoff)
	}
	for _, kind := range []string{"Workload", "AdmissionCheck", "ResourceFlavor"} {
		if _, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: kueue.GroupVersion.Group, Kind: kind}, kueue.GroupVersion.Version); err != nil {
			if meta.IsNoMatchError(err) {
				return ErrNoKueue
			}
			return fmt.Errorf("looking up Kueue's %s API: %w", kind, err)
		}
	}
	if opts.MaxRetryBackoff < opts.RetryBackoff {
		opts.MaxRetryBackoff = opts.RetryBackoff
	}
	r := &Reconciler{
		client:   mgr.GetClient(),
		cluster:  pipeline.ClientCluster{Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), NodeIndex: opts.Nodes},
		pipeline: p,
		admitter: admitter,
		recorder: mgr.GetEventRecorder("mpiguard-admission-check"),
		opts:     opts,
		clock:    clock.RealClock{},
		rejected: lru.New(rejectedSize),
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("kueue-workloads").For(&kueue.Workload{}).Complete(r); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("kueue-admissionchecks").For(&kueue.AdmissionCheck{}).
		Complete(&activeReconciler{client: mgr.GetClient(), now: time.Now})
}

// ownCheck is one of mpiguard's checks of a Workload, in the state it was read in.
type ownCheck struct {
	name       kueue.AdmissionCheckReference
	retryCount int32
	state      kueue.CheckState
	// since is the state's lastTransitionTime.
	since metav1.Time
}

// Reconcile answers the pending mpiguard checks of one Workload whose quota
// Kueue has reserved, and keeps the quota of one it answered Ready while
// Kueue waits for its other checks (renew).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wl := &kueue.Workload{}
	if err := r.client.Get(ctx, req.NamespacedName, wl); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if deactivatedByCheck(wl) {
		return reconcile.Result{}, r.restoreRejection(ctx, wl)
	}
	if !waitsForChecks(wl) {
		if waitsForPlacement(wl) {
			return reconcile.Result{}, r.explainUnplaced(ctx, wl)
		}
		return reconcile.Result{}, nil
	}
	checks, err := r.checksIn(ctx, wl, kueue.CheckStatePending)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(checks) == 0 {
		return r.renew(ctx, wl)
	}
	out, job, err := r.evaluate(ctx, wl)
	if err != nil || out == nil {
		return reconcile.Result{}, err
	}
	if err := r.answer(ctx, wl, job, checks, *out); err != nil {
		return reconcile.Result{}, err
	}
	if out.State == kueue.CheckStateReady {
		// Kueue may wait for other checks: renew before the entry lapses.
		return reconcile.Result{RequeueAfter: r.renewAfter()}, nil
	}
	return reconcile.Result{}, nil
}

// answer sets the outcome on the Workload's checks, and tells the TrainJob
// why it does not start (yet).
func (r *Reconciler) answer(ctx context.Context, wl *kueue.Workload, job *trainer.TrainJob, checks []ownCheck, out CheckState) error {
	if err := r.setState(ctx, wl, checks, out); err != nil {
		// A conflict: the Workload changed since it was read (evicted,
		// say). Decided again on the next event; a reservation written
		// for it is released by the retirer at its grace.
		return err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("admission check answered", "state", out.State, "checks", len(checks))
	if out.State == kueue.CheckStateRejected {
		r.rejected.Add(wl.UID, out.Message)
	}
	r.event(job, wl, out)
	return nil
}

// waitsForChecks says whether Kueue waits for the Workload's checks: its
// quota is reserved, and it is active, not evicted and not finished (an
// evicted Workload's checks are reset to Pending by Kueue and answered once
// quota is reserved again).
func waitsForChecks(wl *kueue.Workload) bool {
	return wl.Status.Admission != nil &&
		meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) &&
		!meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadEvicted) &&
		!meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) &&
		ptr.Deref(wl.Spec.Active, true) &&
		wl.DeletionTimestamp.IsZero()
}

// deactivatedByCheck says whether Kueue deactivated the Workload because a
// check rejected it (the Evicted reason is Kueue's ReasonWithCause).
func deactivatedByCheck(wl *kueue.Workload) bool {
	c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadEvicted)
	return !ptr.Deref(wl.Spec.Active, true) && c != nil && c.Status == metav1.ConditionTrue &&
		c.Reason == kueue.WorkloadDeactivated+"DueTo"+kueue.WorkloadEvictedByAdmissionCheck
}

// restoreRejection puts the reason back on mpiguard's checks of a Workload
// Kueue deactivated after mpiguard rejected it: Kueue's eviction reset them
// to Pending with a message of its own. They stay Pending, so the Workload is
// judged afresh once it is reactivated and its quota reserved again.
func (r *Reconciler) restoreRejection(ctx context.Context, wl *kueue.Workload) error {
	msg, ok := r.rejected.Get(wl.UID)
	if !ok {
		return nil
	}
	checks, err := r.checksIn(ctx, wl, kueue.CheckStatePending)
	if err != nil || len(checks) == 0 {
		return err
	}
	out := CheckState{State: kueue.CheckStatePending, Message: pipeline.Cut(msg.(string)+msgDeactivated, maxMessage, "…")}
	if err := r.setState(ctx, wl, checks, out); err != nil {
		return err
	}
	r.rejected.Remove(wl.UID)
	return nil
}

// checksIn lists the Workload's checks in state whose AdmissionCheck names
// mpiguard as its controller (Kueue's admissioncheck.FilterForController).
func (r *Reconciler) checksIn(ctx context.Context, wl *kueue.Workload, state kueue.CheckState) ([]ownCheck, error) {
	own, err := kueueac.FilterForController(ctx, r.client, wl.Status.AdmissionChecks, ControllerName)
	if err != nil {
		return nil, fmt.Errorf("reading the AdmissionChecks of Workload %s/%s: %w", wl.Namespace, wl.Name, err)
	}
	var out []ownCheck
	for _, s := range wl.Status.AdmissionChecks {
		if s.State == state && slices.Contains(own, s.Name) {
			out = append(out, ownCheck{name: s.Name, retryCount: ptr.Deref(s.RetryCount, 0), state: s.State, since: s.LastTransitionTime})
		}
	}
	return out, nil
}

// trainJobOf returns the MPI TrainJob the Workload was made for, nil when
// it is not a TrainJob's or the job is gone (Kueue deletes the Workload).
func (r *Reconciler) trainJobOf(ctx context.Context, wl *kueue.Workload) (*trainer.TrainJob, bool, error) {
	owner := metav1.GetControllerOf(wl)
	if owner == nil || owner.Kind != trainer.TrainJobKind {
		return nil, false, nil
	}
	if gv, err := schema.ParseGroupVersion(owner.APIVersion); err != nil || gv.Group != trainer.GroupVersion.Group {
		return nil, false, nil
	}
	job := &trainer.TrainJob{}
	key := client.ObjectKey{Namespace: wl.Namespace, Name: owner.Name}
	err := r.client.Get(ctx, key, job)
	if apierrors.IsNotFound(err) {
		err = r.cluster.Live.Get(ctx, key, job)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, true, nil
	case err != nil:
		return nil, true, fmt.Errorf("reading TrainJob %s: %w", key, err)
	case job.UID != owner.UID:
		return nil, true, nil // a new job of the same name: its own Workload comes
	}
	return job, true, nil
}

// event tells the TrainJob's owner why it does not start (yet): a Warning
// with mpiguard's message, which `kubectl describe trainjob` shows next to
// Kueue's events on the Workload.
func (r *Reconciler) event(job *trainer.TrainJob, wl *kueue.Workload, out CheckState) {
	if job == nil {
		return
	}
	var reason, note string
	switch out.State {
	case kueue.CheckStateRetry:
		reason, note = ReasonRetry, "waits for namespace quota (Kueue requeues Workload "+wl.Name+"): "
	case kueue.CheckStateRejected:
		reason, note = ReasonRejected, "rejected by mpiguard's Kueue admission check (Kueue deactivates Workload "+wl.Name+"): "
	default:
		return
	}
	r.recorder.Eventf(job, wl, corev1.EventTypeWarning, reason, "KueueAdmissionCheck", "%s", pipeline.EventNote(note+out.Message, "on Workload "+wl.Name))
}
