// Package jobstate is where a TrainJob is in its life, as mpiguard reads it
// (Kueue's pkg/workload for its Workloads): a stored job that will still
// create pods (CreatesPods), suspended, finished, run by another cluster's
// controller; and what an UPDATE does to it: starts pods (StartsPods),
// resumes, only suspends, leaves it suspended, changes what it runs.
package jobstate

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainjobutil "github.com/kubeflow/trainer/v2/pkg/util/trainjob"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
)

// Suspended says whether job is suspended: it runs no pods (Kueue admits a
// job by resuming it, and preempts it by suspending it).
func Suspended(job *trainer.TrainJob) bool {
	return ptr.Deref(job.Spec.Suspend, false)
}

// Finished says whether a TrainJob completed or failed.
func Finished(job *trainer.TrainJob) bool {
	return meta.IsStatusConditionTrue(job.Status.Conditions, trainer.TrainJobComplete) ||
		meta.IsStatusConditionTrue(job.Status.Conditions, trainer.TrainJobFailed)
}

// RunsElsewhere says whether job's spec.managedBy hands it to another
// controller (Kueue's MultiKueue, which runs a copy on a worker cluster): it
// never creates a pod here, as the Trainer's own test says.
func RunsElsewhere(job *trainer.TrainJob) bool {
	return trainjobutil.IsManagedByExternalController(job)
}

// CreatesPods says whether a stored TrainJob will still create pods here: not
// suspended, not being deleted, not finished, and not run elsewhere.
func CreatesPods(job *trainer.TrainJob) bool {
	return !Suspended(job) && job.DeletionTimestamp.IsZero() && !RunsElsewhere(job) && !Finished(job)
}

// StartsPods says whether admitting a request (old nil for a create) lets
// job create pods here that it could not before: a new running job, or a
// suspended one being resumed (Kueue admits by flipping spec.suspend). Only
// these reserve quota. A job that runs elsewhere never creates a pod here: it
// is judged by every policy but reserves nothing; its rendered view charges
// no quota (render.JobView.RunsElsewhere), which every quota decision reads.
func StartsPods(old, job *trainer.TrainJob) bool {
	if RunsElsewhere(job) {
		return false
	}
	return (old == nil && !Suspended(job)) || Resumes(old, job)
}

// Resumes says whether an UPDATE from old to job resumes a suspended job
// (Kueue admits by flipping spec.suspend), whether or not the job then
// creates pods here: what a denial event calls it.
func Resumes(old, job *trainer.TrainJob) bool {
	return old != nil && Suspended(old) && !Suspended(job)
}

// SpecChanged says whether an UPDATE changes what the TrainJob will run.
// Metadata-only updates (labels, finalizers, deletion) change nothing that
// runs: judging them would let a policy tightened after admission block the
// Trainer from removing its finalizer. A TrainJob being deleted changes
// nothing that matters any more.
func SpecChanged(old, job *trainer.TrainJob) bool {
	if job.DeletionTimestamp != nil {
		return false
	}
	return !equality.Semantic.DeepEqual(old.Spec, job.Spec)
}

// OnlySuspends says whether an UPDATE switches the job to suspended and
// changes nothing else in spec. Suspending is always allowed, even when the
// job now breaks a policy tightened since it was admitted: suspending stops
// its pods, it starts nothing (Kueue preempts this way). Resuming it is
// judged in full (StartsPods). The webhook configuration's
// not-only-suspending matchCondition keeps these requests from mpiguard in
// the first place; this is the same rule for a cluster where they arrive
// anyway. An update that suspends and also changes something else is judged
// like any other: the other change is the user's to justify, and the job
// would carry it on when resumed.
func OnlySuspends(old, job *trainer.TrainJob) bool {
	if Suspended(old) || !Suspended(job) {
		return false
	}
	before := old.Spec.DeepCopy()
	before.Suspend = job.Spec.Suspend
	return equality.Semantic.DeepEqual(*before, job.Spec)
}

// StaysSuspended says whether an UPDATE leaves the job suspended: it starts
// nothing now, and whatever it asks is decided when it is resumed.
func StaysSuspended(old, job *trainer.TrainJob) bool {
	return old != nil && Suspended(old) && Suspended(job)
}

// AsResume is the write that resumes job, as an admission sees it: old is
// job suspended, resumed is job running; both are copies. A job that waits
// for pods (stored suspended, or created to wait in a queue) is judged as
// this write: the one that starts its pods.
func AsResume(job *trainer.TrainJob) (old, resumed *trainer.TrainJob) {
	old, resumed = job.DeepCopy(), job.DeepCopy()
	old.Spec.Suspend, resumed.Spec.Suspend = ptr.To(true), ptr.To(false)
	return old, resumed
}
