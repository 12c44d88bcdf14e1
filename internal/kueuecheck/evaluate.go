package kueuecheck

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reservations/admit"
)

// evaluate judges the resume Kueue will make of the Workload's TrainJob and,
// when it is allowed, reserves the namespace quota it needs. It returns the
// outcome and the job (nil when the Workload is not a TrainJob's); no
// outcome when there is nothing to decide (the job is gone).
func (r *Reconciler) evaluate(ctx context.Context, wl *kueue.Workload) (*CheckState, *trainer.TrainJob, error) {
	if origin, ok := dispatchedBy(wl); ok {
		return &CheckState{State: kueue.CheckStateReady, Message: fmt.Sprintf(msgDispatched, origin)}, nil, nil
	}
	job, isTrainJob, err := r.trainJobOf(ctx, wl)
	switch {
	case err != nil:
		return nil, nil, err
	case !isTrainJob:
		return &CheckState{State: kueue.CheckStateReady, Message: msgUngoverned}, nil, nil
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

// judgeReserving decides the request (stage Admit: mpiguard's mutations of
// the update applied, then every policy) through the quota reservation
// transaction the validating webhook uses for the resume itself
// (admit.Admitter): judged against the namespace's quotas and, when
// allowed, its reservation written. A denial is judged once more against
// the namespace idle to tell a busy quota (Retry) from a job that can never
// run as it is (Rejected).
func (r *Reconciler) judgeReserving(ctx context.Context, req *pipeline.Request) (*CheckState, error) {
	prepared, err := r.pipeline.Prepare(ctx, r.cluster, req, pipeline.Admit)
	if err != nil {
		return nil, err
	}
	evaluation, err := r.admitter.Admit(ctx, admit.Request{Job: req, Prepared: prepared})
	if err != nil {
		return nil, err
	}
	if !evaluation.Governed || evaluation.Allowed() {
		out := decide(evaluation, nil)
		return &out, nil
	}
	// Would it fit a namespace where nothing is used or reserved?
	idle, err := r.pipeline.Judge(ctx, evaluation, &input.QuotaState{Quotas: idleQuotas(evaluation.Quotas())})
	if err != nil {
		return nil, err
	}
	out := decide(evaluation, idle)
	return &out, nil
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
