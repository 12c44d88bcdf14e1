package retire

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/reservations"
)

// RBAC (ClusterRole): the leader compares the namespace's ResourceQuotas
// with its pods, both read live, when a quota may count less than the pods.
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch

// quotaEvents queues the reservation of a quota's namespace when its count
// may have been recomputed (recounted), and marks the namespace to be
// compared live on its next reconcile.
func (r *Reconciler) quotaEvents() handler.EventHandler {
	enqueue := handler.EnqueueRequestsFromMapFunc(r.reservationOf)
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*corev1.ResourceQuota)
			cur, okCur := e.ObjectNew.(*corev1.ResourceQuota)
			if okOld && okCur && recounted(old, cur) {
				r.suspect.Store(cur.Namespace, struct{}{})
				enqueue.Update(ctx, e, q)
			}
		},
	}
}

// settle keeps each entry that retirements release for PodsCreated until
// settle after this leader first saw its pods, so the object is still there
// when a recompute that raced their creates is seen (counted.go).
func (r *Reconciler) settle(res *v1alpha1.QuotaReservation, retirements []retirement, now time.Time) {
	for i := range retirements {
		if retirements[i].release != ReasonPodsCreated {
			continue
		}
		key := admissionKey(&res.Spec.Entries[i])
		seen, ok := r.podsSeen.Get(key)
		if !ok {
			r.podsSeen.Add(key, now)
			seen = now
		}
		if until := seen.(time.Time).Add(settle); now.Before(until) {
			retirements[i] = retirement{recheck: until}
		} else {
			r.podsSeen.Remove(key)
		}
	}
}

// recount returns spec.uncounted as it should be now: read live when a
// quota may count less than the namespace's pods (a recompute seen, a
// record to confirm, a shortfall reported, or the first reconcile of the
// namespace by this leader), else as it is. The comparison lists every pod
// of the namespace, so it is not made on every release. recheck is when to
// compare again (zero: on the next event).
func (r *Reconciler) recount(ctx context.Context, res *v1alpha1.QuotaReservation, now time.Time) (record []v1alpha1.UncountedUsage, recheck time.Time, err error) {
	ns := res.Spec.Namespace
	_, suspect := r.suspect.LoadAndDelete(ns)
	_, checked := r.checked.LoadOrStore(ns, struct{}{})
	_, behind := r.behind.Load(ns)
	if !suspect && checked && !behind && len(res.Spec.Uncounted) == 0 {
		return res.Spec.Uncounted, time.Time{}, nil
	}
	short, err := r.compare(ctx, ns, now)
	var notSynced *reservations.NotSyncedError
	if errors.As(err, &notSynced) {
		// Admission refuses against it until its controller counts it: compare then.
		r.suspect.Store(ns, struct{}{})
		return res.Spec.Uncounted, now.Add(behindRecheck), nil
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	record, expired := uncountedNow(res.Spec.Uncounted, short, now)
	r.report(ctx, res, short, expired)
	switch {
	case len(record) > 0:
		return record, now.Add(behindRecheck), nil
	case len(short) > 0:
		// Dropped after behindTrust: still compared, less often, so the
		// gauge (and its alert) clears when the controller catches up.
		return nil, now.Add(time.Minute), nil
	}
	return nil, time.Time{}, nil
}

// compare reads the namespace's pods and then its quotas live, and returns
// what the quotas count less than the pods charge (Shortfalls). In that
// order a pod listed was charged before the quotas were read (the apiserver
// charges a pod before it stores it); a pod that finished in between may
// have been given back already, so a shortfall found is confirmed against a
// second list: only pods charged in both count.
func (r *Reconciler) compare(ctx context.Context, ns string, now time.Time) ([]Shortfall, error) {
	before, err := r.livePods(ctx, ns)
	if err != nil {
		return nil, err
	}
	quotas, err := reservations.LiveQuotas(ctx, r.client, r.live, ns)
	if err != nil {
		return nil, err
	}
	short := Shortfalls(quotas, before, now)
	if len(short) == 0 {
		return nil, nil
	}
	after, err := r.livePods(ctx, ns)
	if err != nil {
		return nil, err
	}
	return Shortfalls(quotas, chargedInBoth(before, after, now), now), nil
}

func (r *Reconciler) livePods(ctx context.Context, ns string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.live.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the pods of %q: %w", ns, err)
	}
	return pods.Items, nil
}

// chargedInBoth is the pods charged (Charged at now) in both lists, as
// after has them.
func chargedInBoth(before, after []corev1.Pod, now time.Time) []corev1.Pod {
	charged := make(map[types.UID]bool, len(before))
	for i := range before {
		charged[before[i].UID] = reservations.Charged(&before[i], now)
	}
	var out []corev1.Pod
	for i := range after {
		if charged[after[i].UID] && reservations.Charged(&after[i], now) {
			out = append(out, after[i])
		}
	}
	return out
}

// report says, once per change, which quotas of the namespace count less
// than its pods (a Warning Event on res, a log line), and remembers it
// (r.behind, which the gauge shows).
func (r *Reconciler) report(ctx context.Context, res *v1alpha1.QuotaReservation, short, expired []Shortfall) {
	ns := res.Spec.Namespace
	if len(short) == 0 {
		r.behind.Delete(ns)
		return
	}
	msg := describeUncounted(short, false)
	if len(expired) > 0 {
		msg = describeUncounted(expired, true)
	}
	if prev, _ := r.behind.Swap(ns, msg); prev == msg {
		return
	}
	ctrl.LoggerFrom(ctx).Info("a ResourceQuota counts less than the pods that exist", "namespace", ns, "detail", msg)
	r.recorder.Eventf(res, nil, corev1.EventTypeWarning, ReasonQuotaStatusBehind, "Recount", "%s", msg)
}

// admissionKey names the admission that wrote entry e (sameAdmission).
func admissionKey(e *v1alpha1.ReservationEntry) string {
	return fmt.Sprintf("%s/%s/%s/%s/%d", e.TrainJob, e.UID, e.RequestUID, e.Operation, e.AdmittedAt.UnixNano())
}
