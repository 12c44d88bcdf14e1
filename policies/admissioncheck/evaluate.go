package admissioncheck

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/policies/engine"
	"github.com/mpiguard/mpiguard/policies/pipeline"
	"github.com/mpiguard/mpiguard/policies/quota"
	"github.com/mpiguard/mpiguard/policies/quota/api/v1alpha1"
	"github.com/mpiguard/mpiguard/policies/quota/reservations"
)

// maxReserveAttempts bounds the decide-and-write rounds of one Workload: a
// lost write means a webhook replica wrote the namespace's reservations
// first, and the next round reads them live.
const maxReserveAttempts = 10

// evaluate judges the resume Kueue will make of the Workload's TrainJob and,
// when it is allowed, reserves the namespace quota it needs. It returns the
// outcome and the job (nil when the Workload is not a TrainJob's); no
// outcome when there is nothing to decide (the job is gone).
func (r *Reconciler) evaluate(ctx context.Context, wl *kueue.Workload) (*Outcome, *trainer.TrainJob, error) {
	job, isTrainJob, err := r.trainJobOf(ctx, wl)
	switch {
	case err != nil:
		return nil, nil, err
	case !isTrainJob:
		return &Outcome{State: kueue.CheckStateReady, Message: msgUngoverned}, nil, nil
	case job == nil:
		return nil, nil, nil
	}
	placed, err := placements(ctx, r.client, wl.Status.Admission)
	if err != nil {
		return nil, nil, err
	}
	// The resume as the validating webhook will see it: the stored job,
	// suspended, updated to run on the flavors Kueue assigned. Not
	// recorded in the decision log: that has the resume itself.
	old := job.DeepCopy()
	old.Spec.Suspend = ptr.To(true)
	req := &pipeline.Request{Operation: engine.Update, TrainJob: resumed(job, placed), OldTrainJob: old, RecordLater: true}
	out, err := r.judgeReserving(ctx, req)
	if err != nil {
		return nil, nil, fmt.Errorf("judging TrainJob %s/%s for Kueue: %w", job.Namespace, job.Name, err)
	}
	return out, job, nil
}

// judgeReserving runs the request through the admission pipeline (stage
// Admit: mpiguard's mutations of the update applied, then every policy)
// against the namespace's quota state read live, and writes the
// reservation of an allowed job that charges a quota, as the validating
// webhook does for a resume (webhooks/trainjob/reserve.go): a lost write
// decides again on a fresh read.
func (r *Reconciler) judgeReserving(ctx context.Context, req *pipeline.Request) (*Outcome, error) {
	ns := req.TrainJob.Namespace
	nsc, err := r.cluster.Namespace(ctx, ns)
	if err != nil {
		return nil, err
	}
	var verdict *pipeline.Verdict
	for range maxReserveAttempts {
		res, err := r.store.Get(ctx, ns, true)
		if err != nil {
			return nil, err
		}
		state, err := reservations.ReadState(ctx, r.cluster.Reader, r.cluster.Live, ns, res, r.pipeline.StoredRenderer(r.cluster, nsc), false)
		if err != nil {
			return nil, err
		}
		if verdict == nil {
			verdict, err = r.pipeline.Run(ctx, pipeline.WithQuotaState(r.cluster, state.Quotas, state.Holders), req, pipeline.Admit)
		} else {
			verdict, err = r.pipeline.Requote(ctx, req, verdict, state.Quotas, state.Holders)
		}
		if err != nil {
			return nil, err
		}
		if !verdict.Governed {
			out := decide(verdict, nil)
			return &out, nil
		}
		if !verdict.Allowed() {
			// Would it fit a namespace where nothing is used or reserved?
			idle, err := r.pipeline.Requote(ctx, req, verdict, idleQuotas(state.Quotas), nil)
			if err != nil {
				return nil, err
			}
			out := decide(verdict, idle)
			return &out, nil
		}
		// Held whenever a quota exists (as the webhook holds it): each
		// decision charges it against the quotas of its time.
		parts := quota.PartsOf(verdict.View)
		if len(parts) > 0 && len(state.Quotas) > 0 {
			err = r.store.Put(ctx, res, r.entry(req, parts))
			if reservations.Retryable(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("recording the quota reservation: %w", err)
			}
		}
		out := decide(verdict, nil)
		return &out, nil
	}
	return nil, fmt.Errorf("recording the quota reservation: %d writes lost to other writers of namespace %s's reservations", maxReserveAttempts, ns)
}

// entry is the reservation of the resume judged Ready: an UPDATE entry that
// the retirer releases once the job's pods exist, or at its grace if the
// resume never lands; the webhook replaces it with its own when the resume
// arrives.
func (r *Reconciler) entry(req *pipeline.Request, parts []v1alpha1.ReservedPart) v1alpha1.ReservationEntry {
	now := r.clock.Now()
	job := req.TrainJob
	return v1alpha1.ReservationEntry{
		TrainJob:              job.Name,
		UID:                   job.UID,
		Operation:             v1alpha1.OperationUpdate,
		ResumedFromGeneration: req.OldTrainJob.Generation,
		AdmittedAt:            metav1.NewTime(now),
		HoldUntil:             metav1.NewTime(now.Add(r.grace)),
		Parts:                 parts,
	}
}

// idleQuotas are quotas with nothing used: the namespace as it is when every
// other job has ended.
func idleQuotas(quotas []corev1.ResourceQuota) []corev1.ResourceQuota {
	out := make([]corev1.ResourceQuota, len(quotas))
	for i := range quotas {
		quotas[i].DeepCopyInto(&out[i])
		out[i].Status.Used = nil
	}
	return out
}
