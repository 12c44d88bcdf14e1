package pipeline

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainjobutil "github.com/kubeflow/trainer/v2/pkg/util/trainjob"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

// specChanged says whether an UPDATE changes what the TrainJob will run.
// Metadata-only updates (labels, finalizers, deletion) change nothing that
// runs: judging them would let a policy tightened after admission block the
// Trainer from removing its finalizer. A TrainJob being deleted changes
// nothing that matters any more.
func specChanged(old, job *trainer.TrainJob) bool {
	if job.DeletionTimestamp != nil {
		return false
	}
	return !equality.Semantic.DeepEqual(old.Spec, job.Spec)
}

// onlySuspends says whether an UPDATE switches the job to suspended and
// changes nothing else in spec. Suspending is always allowed, even when the
// job now breaks a policy tightened since it was admitted: suspending stops
// its pods, it starts nothing (Kueue preempts this way). Resuming it is
// judged in full (StartsPods). The webhook configuration's
// not-only-suspending matchCondition keeps these requests from mpiguard in
// the first place; this is the same rule for a cluster where they arrive
// anyway. An update that suspends and also changes something else is judged
// like any other: the other change is the user's to justify, and the job
// would carry it on when resumed.
func onlySuspends(old, job *trainer.TrainJob) bool {
	if ptr.Deref(old.Spec.Suspend, false) || !ptr.Deref(job.Spec.Suspend, false) {
		return false
	}
	before := old.Spec.DeepCopy()
	before.Suspend = job.Spec.Suspend
	return equality.Semantic.DeepEqual(*before, job.Spec)
}

// staysSuspended says whether an UPDATE leaves the job suspended: it starts
// nothing now, and whatever it asks is decided when it is resumed
// (deferDenials).
func staysSuspended(old, job *trainer.TrainJob) bool {
	return old != nil && ptr.Deref(old.Spec.Suspend, false) && ptr.Deref(job.Spec.Suspend, false)
}

// StartsPods says whether admitting the request lets the job create pods
// here that it could not before: a new running job, or a suspended one being
// resumed (Kueue admits by flipping spec.suspend). Only these reserve quota.
// A job whose spec.managedBy hands it to another controller (Kueue's
// MultiKueue, which runs a copy on a worker cluster) never creates a pod
// here: the Trainer skips it, by the Trainer's own test. It is judged by
// every policy but reserves nothing; its rendered view charges no quota
// (render.JobView.RunsElsewhere), which every quota decision reads.
func StartsPods(req *Request) bool {
	if trainjobutil.IsManagedByExternalController(req.TrainJob) {
		return false
	}
	return (req.OldTrainJob == nil && !ptr.Deref(req.TrainJob.Spec.Suspend, false)) || Resumes(req)
}

// Resumes says whether the request is an UPDATE that resumes a suspended
// job (Kueue admits by flipping spec.suspend), whether or not the job then
// creates pods here: what a denial event calls it.
func Resumes(req *Request) bool {
	return req.OldTrainJob != nil && ptr.Deref(req.OldTrainJob.Spec.Suspend, false) && !ptr.Deref(req.TrainJob.Spec.Suspend, false)
}
