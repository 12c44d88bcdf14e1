package reservations

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/policies/quota/api/v1alpha1"
)

// RBAC (ClusterRole): a release for PodsCreated reads the namespace's
// ResourceQuotas and pods live, to see that the quotas count the pods.
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch

// behindState is what the leader knows of a namespace whose quotas count
// less than its pods: since when, and what it last said (one Event each).
type behindState struct {
	since    time.Time
	reported string
}

// holdUntilCounted keeps the entries that verdicts release for PodsCreated
// until this leader has seen their pods exist for settle and a live read
// finds the namespace's quotas counting what its pods charge (counted.go).
func (r *Retirer) holdUntilCounted(ctx context.Context, res *v1alpha1.QuotaReservation, verdicts []verdict, now time.Time) error {
	var due []int // entries whose pods have existed for settle
	for i := range verdicts {
		if verdicts[i].release != ReasonPodsCreated {
			continue
		}
		key := admissionKey(&res.Spec.Entries[i])
		seen := now
		if t, ok := r.podsSeen.Get(key); ok {
			seen = t.(time.Time)
		} else {
			r.podsSeen.Add(key, now)
		}
		if until := seen.Add(settle); now.Before(until) {
			verdicts[i] = verdict{recheck: until}
			continue
		}
		due = append(due, i)
	}
	if len(due) == 0 {
		return nil
	}
	hold, err := r.quotasBehind(ctx, res, due, now)
	if err != nil {
		return err
	}
	for _, i := range due {
		if hold {
			verdicts[i] = verdict{recheck: now.Add(behindRecheck)}
		} else {
			r.podsSeen.Remove(admissionKey(&res.Spec.Entries[i]))
		}
	}
	return nil
}

// quotasBehind reads the namespace's quotas and pods live and says whether
// the entries due (their pods exist) must be kept: a quota counts less than
// the pods charge it, for less than behindTrust so far, or is not synced.
func (r *Retirer) quotasBehind(ctx context.Context, res *v1alpha1.QuotaReservation, due []int, now time.Time) (bool, error) {
	ns := res.Spec.Namespace
	quotas, err := LiveQuotas(ctx, r.client, r.live, ns)
	var notSynced *NotSyncedError
	if errors.As(err, &notSynced) {
		return true, nil // nothing is admitted against it either: wait for its controller
	}
	if err != nil {
		return false, err
	}
	var pods corev1.PodList
	if err := r.live.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return false, fmt.Errorf("listing the pods of %q: %w", ns, err)
	}
	short := Shortfalls(quotas, pods.Items, now)
	if len(short) == 0 {
		r.behind.Delete(ns)
		statusBehind.DeleteLabelValues(ns)
		return false, nil
	}
	v, _ := r.behind.LoadOrStore(ns, &behindState{since: now})
	st := v.(*behindState)
	expired := now.Sub(st.since) >= behindTrust
	jobs := make([]string, len(due))
	for k, i := range due {
		jobs[k] = ns + "/" + res.Spec.Entries[i].TrainJob
	}
	if msg := describeShortfalls(short, jobs, expired); msg != st.reported {
		st.reported = msg
		ctrl.LoggerFrom(ctx).Info("quota status behind the pods that exist", "namespace", ns, "detail", msg)
		r.recorder.Eventf(res, nil, corev1.EventTypeWarning, ReasonQuotaStatusBehind, "Retire", "%s", msg)
	}
	statusBehind.WithLabelValues(ns).Set(1)
	return !expired, nil
}

// admissionKey names the admission that wrote entry e (sameAdmission).
func admissionKey(e *v1alpha1.ReservationEntry) string {
	return fmt.Sprintf("%s/%s/%s/%s/%d", e.TrainJob, e.UID, e.RequestUID, e.Operation, e.AdmittedAt.UnixNano())
}
