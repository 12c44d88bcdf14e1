// Package retire is the quota ledger's retiring controller (Reconciler, on
// the elected leader): it releases an entry once its TrainJob's pods exist
// (the quota counts them), or the job is suspended, finished, deleted or
// never appeared (retirement.go), and records what a ResourceQuota's
// status.used misses of the pods that exist (counted.go, recount.go).
package retire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/lru"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/reservations"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
)

// ControllerName names the controller in logs, metrics and as event reporter.
const ControllerName = "mpiguard-quota-reservations"

// RBAC (ClusterRole: reserved jobs are in every namespace; the reservations
// themselves are in mpiguard's namespace, store.go):
//
// A reservation entry is released once its TrainJob exists and is charged, or
// never appeared within the grace.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch
// The job's pods say whether the ResourceQuota counts it already.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// Events on what it released, in the object's namespace.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler releases reservation entries that the quota counts now, or that
// will never be charged. It runs on the elected leader only (a controller).
type Reconciler struct {
	client client.Client
	// live confirms what the cache cannot: that a TrainJob never appeared, or
	// that a resume never landed. Never release on the cache alone.
	live      client.Reader
	recorder  events.EventRecorder
	namespace string
	now       func() time.Time
	// deleted holds the UIDs of TrainJobs whose deletion the leader saw
	// (jobEvents): their entries go at once. A UID is never reused; the
	// bound only limits memory (a leader that did not see a deletion waits
	// for the entry's grace, as before).
	deleted *lru.Cache
	// reported is, per QuotaReservation name, the resourceVersion of it this
	// leader said it cannot read (a newer format, a hand edit): it is
	// reconciled on every pod event of its namespace, and one log line (and
	// Event) per version of the object says it.
	reported sync.Map
	// podsSeen is when this leader first saw every pod of an entry's job
	// exist (admissionKey): the entry waits settle after it (counted.go).
	podsSeen *lru.Cache
	// suspect holds the governed namespaces where a quota's count may have
	// been recomputed since (quotaEvents), checked those this leader has
	// compared once, and behind, per namespace, the account of its quotas
	// behind their pods it last reported (recount.go).
	suspect, checked, behind sync.Map
}

// deletedJobs bounds the deletions remembered: far more than the entries a
// namespace's jobs hold at a time.
const deletedJobs = 4096

// Setup registers the retiring controller; namespace is mpiguard's own.
func Setup(mgr ctrl.Manager, namespace string) error {
	r := &Reconciler{
		client: mgr.GetClient(), live: mgr.GetAPIReader(), recorder: mgr.GetEventRecorder(ControllerName),
		namespace: namespace, now: time.Now, deleted: lru.New(deletedJobs), podsSeen: lru.New(deletedJobs),
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("quotareservations").
		// The reservations themselves (the cache holds mpiguard's namespace only):
		// a new entry may already be retirable, or must be rechecked at its grace.
		For(&v1alpha1.QuotaReservation{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A TrainJob's suspension, completion, deletion or appearance decides its entry.
		Watches(&trainer.TrainJob{}, r.jobEvents()).
		// Pods that now exist are counted by the quota: their entry can go.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.reservationOf)).
		// A quota's count recomputed may have missed pods just created: compare it live.
		Watches(&corev1.ResourceQuota{}, r.quotaEvents()).
		Complete(r)
}

// reservationOf maps an object in a governed namespace to that namespace's
// QuotaReservation (one cache miss when the namespace has none).
func (r *Reconciler) reservationOf(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: r.namespace, Name: o.GetNamespace()}}}
}

// jobEvents queues the reservation of a TrainJob's namespace on each of its
// events, and remembers the UID of each TrainJob deleted.
func (r *Reconciler) jobEvents() handler.EventHandler {
	enqueue := handler.EnqueueRequestsFromMapFunc(r.reservationOf)
	return handler.Funcs{
		CreateFunc:  enqueue.Create,
		UpdateFunc:  enqueue.Update,
		GenericFunc: enqueue.Generic,
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if uid := e.Object.GetUID(); uid != "" {
				r.deleted.Add(uid, struct{}{})
			}
			enqueue.Delete(ctx, e, q)
		},
	}
}

// Reconcile releases the entries of one QuotaReservation that hold nothing any more.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res := &v1alpha1.QuotaReservation{}
	if err := r.client.Get(ctx, req.NamespacedName, res); err != nil {
		if apierrors.IsNotFound(err) {
			entriesHeld.DeleteLabelValues(req.Name)
			statusBehind.DeleteLabelValues(req.Name)
			r.behind.Delete(req.Name)
			r.checked.Delete(req.Name)
			r.suspect.Delete(req.Name)
			forgetReserved(req.Name)
			r.reported.Delete(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if err := store.CheckReadable(res); err != nil {
		// A newer replica's object: its own leader retires its entries.
		// One edited by hand: nothing is retired until it is mended (the
		// edit is a new generation, reconciled), and admissions in its
		// namespace refuse with the same words.
		if prev, seen := r.reported.Swap(res.Name, res.ResourceVersion); !seen || prev != res.ResourceVersion {
			ctrl.LoggerFrom(ctx).Info("not retiring entries", "reason", err.Error())
			var invalid *store.InvalidError
			if errors.As(err, &invalid) {
				r.recorder.Eventf(res, nil, corev1.EventTypeWarning, store.ReasonInvalidEntries, "Retire", "%v", err)
			}
		}
		return reconcile.Result{}, nil
	}
	r.reported.Delete(res.Name)
	ns := res.Spec.Namespace
	now := r.now()
	existing, err := reservations.ReadExisting(ctx, r.client, ns, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	retirements := make([]retirement, len(res.Spec.Entries))
	for i := range res.Spec.Entries {
		e := &res.Spec.Entries[i]
		if retirements[i], err = r.retirementOf(ctx, ns, e, existing.Of(e.TrainJob, e.UID), now); err != nil {
			return reconcile.Result{}, err
		}
	}
	r.settle(res, retirements, now)
	record, next, err := r.recount(ctx, res, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	var (
		keep     []v1alpha1.ReservationEntry
		released []releasedEntry
	)
	for i := range res.Spec.Entries {
		e, v := &res.Spec.Entries[i], retirements[i]
		if v.release != "" {
			released = append(released, releasedEntry{entry: e, reason: v.release})
			continue
		}
		keep = append(keep, *e)
		if !v.recheck.IsZero() && (next.IsZero() || v.recheck.Before(next)) {
			next = v.recheck
		}
	}
	if len(released) > 0 || !equality.Semantic.DeepEqual(record, res.Spec.Uncounted) {
		if res, keep, released, err = r.release(ctx, res, released, record); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		for _, rel := range released {
			releasedTotal.WithLabelValues(rel.reason).Inc()
			r.recorder.Eventf(res, nil, corev1.EventTypeNormal, rel.reason, "Release",
				"TrainJob %s/%s no longer holds quota here: %s", ns, rel.entry.TrainJob, describeRelease(rel.reason))
		}
	}
	entriesHeld.WithLabelValues(ns).Set(float64(len(keep)))
	if _, behind := r.behind.Load(ns); behind {
		statusBehind.WithLabelValues(ns).Set(1)
	} else {
		statusBehind.WithLabelValues(ns).Set(0)
	}
	if err := r.observeReserved(ctx, res, keep, existing); err != nil {
		return reconcile.Result{}, err
	}
	if next.IsZero() {
		return reconcile.Result{}, nil
	}
	// A little past the grace, so the recheck does not land just before it.
	return reconcile.Result{RequeueAfter: next.Sub(now) + 100*time.Millisecond}, nil
}

type releasedEntry struct {
	entry  *v1alpha1.ReservationEntry
	reason string
}

// retirementOf decides on entry e from the cache, and confirms with a live read
// when the cache alone cannot tell.
func (r *Reconciler) retirementOf(ctx context.Context, ns string, e *v1alpha1.ReservationEntry, pods map[string]int32, now time.Time) (retirement, error) {
	job, err := r.job(ctx, r.client, ns, e.TrainJob)
	if err != nil {
		return retirement{}, err
	}
	_, deleted := r.deleted.Get(e.UID)
	v := retirementFor(e, job, pods, now, false, deleted)
	if !v.confirm {
		return v, nil
	}
	if job, err = r.job(ctx, r.live, ns, e.TrainJob); err != nil {
		return retirement{}, err
	}
	return retirementFor(e, job, pods, now, true, deleted), nil
}

func (r *Reconciler) job(ctx context.Context, reader client.Reader, ns, name string) (*trainer.TrainJob, error) {
	job := &trainer.TrainJob{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading TrainJob %s/%s: %w", ns, name, err)
	}
	return job, nil
}

// release removes the released entries from res and writes it, and returns
// the object written (res when it was deleted), the entries it kept and
// those it released. Every admitted create in the namespace writes the same
// object, so under a stream of creates the write, made after a live read of
// each entry that needs one, conflicts more often than not; and a reconcile
// that ends in a conflict decides everything again after a growing backoff:
// released entries then piled up until the namespace hit its cap of
// unconfirmed entries (500 creates, each deleted 20 creates later, released
// 7 entries). So on a conflict the object is read again from the apiserver
// and the same entries removed from it, without deciding again: a release
// is final (pods exist, the job finished, is suspended, was deleted or never
// appeared past its grace), and entries admitted since are not among them.
func (r *Reconciler) release(ctx context.Context, res *v1alpha1.QuotaReservation, released []releasedEntry, uncounted []v1alpha1.UncountedUsage) (*v1alpha1.QuotaReservation, []v1alpha1.ReservationEntry, []releasedEntry, error) {
	var keep []v1alpha1.ReservationEntry
	var gone []releasedEntry
	first := true
	err := retry.RetryOnConflict(releaseRetry, func() error {
		if !first {
			// Read after the retry's pause, right before writing: read
			// before it, the object was written again by the time of the
			// write (a variant that did so failed the admission suite's
			// stream spec).
			fresh := &v1alpha1.QuotaReservation{}
			if err := r.live.Get(ctx, client.ObjectKeyFromObject(res), fresh); err != nil {
				return err
			}
			if err := store.CheckReadable(fresh); err != nil {
				return err
			}
			res = fresh
		}
		first = false
		keep, gone = withoutReleased(res.Spec.Entries, released)
		if len(gone) == 0 && equality.Semantic.DeepEqual(uncounted, res.Spec.Uncounted) {
			return nil
		}
		return r.write(ctx, res, keep, uncounted)
	})
	return res, keep, gone, err
}

// releaseRetry paces release's attempts: many more than client-go's
// DefaultRetry (5 attempts 10 ms apart), with jitter, because admissions in a
// busy namespace write the same object between a release's read and its
// write, and DefaultRetry runs out under concurrent streams of creates
// (test/integration/admission/retirer_test.go). About 1 s in all.
var releaseRetry = wait.Backoff{Steps: 12, Duration: 5 * time.Millisecond, Factor: 1.4, Jitter: 1.0}

// withoutReleased splits entries into those kept and those released, an
// entry being released when it is one of released (the same admission).
func withoutReleased(entries []v1alpha1.ReservationEntry, released []releasedEntry) ([]v1alpha1.ReservationEntry, []releasedEntry) {
	var keep []v1alpha1.ReservationEntry
	var gone []releasedEntry
	for i := range entries {
		e := &entries[i]
		j := slices.IndexFunc(released, func(rel releasedEntry) bool { return sameAdmission(rel.entry, e) })
		if j < 0 {
			keep = append(keep, *e)
			continue
		}
		gone = append(gone, releasedEntry{entry: e, reason: released[j].reason})
	}
	return keep, gone
}

// sameAdmission says whether a and b are the entry one admission wrote.
func sameAdmission(a, b *v1alpha1.ReservationEntry) bool {
	return a.TrainJob == b.TrainJob && a.UID == b.UID && a.RequestUID == b.RequestUID &&
		a.Operation == b.Operation && a.AdmittedAt.Equal(&b.AdmittedAt)
}

// write stores the entries kept, with the resourceVersion read: an admission
// that appended an entry since makes it conflict rather than be lost. An
// object left without entries or a record of uncounted usage is deleted,
// under the same precondition.
func (r *Reconciler) write(ctx context.Context, res *v1alpha1.QuotaReservation, keep []v1alpha1.ReservationEntry, uncounted []v1alpha1.UncountedUsage) error {
	if len(keep) == 0 && len(uncounted) == 0 {
		return r.client.Delete(ctx, res, client.Preconditions{ResourceVersion: &res.ResourceVersion, UID: &res.UID})
	}
	out := res.DeepCopy()
	out.Spec.Entries = keep
	out.Spec.Uncounted = uncounted
	return r.client.Update(ctx, out)
}

func describeRelease(reason string) string {
	switch reason {
	case ReasonPodsCreated:
		return "its pods exist, so the namespace's ResourceQuotas count them"
	case ReasonSuspended:
		return "it is suspended and creates no pods"
	case ReasonFinished:
		return "it finished"
	case ReasonDeleted:
		return "it was deleted"
	case ReasonNeverCreated:
		return "it was admitted but never created (its create failed after admission)"
	case ReasonResumeNotApplied:
		return "its resume was admitted but never applied"
	}
	return reason
}
