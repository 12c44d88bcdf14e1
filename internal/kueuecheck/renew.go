package kueuecheck

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// renew keeps the namespace quota of a Workload mpiguard's check said Ready
// for while Kueue still waits for its other checks. The check's reservation
// entry holds for the grace: after it, the retirer releases it as a resume
// never applied, and a check still Ready would let Kueue resume a job whose
// quota was given away. So before less than half the grace is left, the job
// is judged again as on the first answer, which writes its entry afresh (the
// quota stays held); if it no longer fits, or is no longer allowed, the
// check goes to Retry or Rejected, as a first answer would. An entry
// released anyway (the leader was away longer than half the grace) is
// reserved again the same way, or the check leaves Ready.
func (r *Reconciler) renew(ctx context.Context, wl *kueue.Workload) (reconcile.Result, error) {
	if meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted) {
		return reconcile.Result{}, nil // Kueue resumes it now; the webhook's entry takes over
	}
	checks, err := r.checksIn(ctx, wl, kueue.CheckStateReady)
	if err != nil || len(checks) == 0 {
		return reconcile.Result{}, err
	}
	job, _, err := r.trainJobOf(ctx, wl)
	if err != nil || job == nil {
		return reconcile.Result{}, err // not a TrainJob's, or gone: nothing held
	}
	left, err := r.heldFor(ctx, job)
	if err != nil {
		return reconcile.Result{}, err
	}
	if left > r.admitter.Grace()/2 {
		return reconcile.Result{RequeueAfter: left - r.admitter.Grace()/2}, nil
	}
	out, job, err := r.evaluate(ctx, wl)
	if err != nil || out == nil {
		return reconcile.Result{}, err
	}
	if out.State == kueue.CheckStateReady {
		if left, err = r.heldFor(ctx, job); err != nil || left == 0 {
			return reconcile.Result{}, err // it charges no quota: nothing to keep
		}
		ctrl.LoggerFrom(ctx).V(1).Info("quota reservation renewed while Kueue waits for other checks", "holdFor", left)
		return reconcile.Result{RequeueAfter: r.renewAfter()}, nil
	}
	return reconcile.Result{}, r.answer(ctx, wl, job, checks, *out)
}

// heldFor is how long the reservation entry of job (same name and UID)
// still holds on trust, 0 when it has none.
func (r *Reconciler) heldFor(ctx context.Context, job *trainer.TrainJob) (time.Duration, error) {
	e, err := r.admitter.Entry(ctx, job)
	if err != nil || e == nil {
		return 0, err
	}
	return max(e.HoldUntil.Sub(r.clock.Now()), 0), nil
}

// renewAfter is when a reservation written now is renewed: half its grace.
func (r *Reconciler) renewAfter() time.Duration { return r.admitter.Grace() / 2 }
