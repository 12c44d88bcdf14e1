package retire

import (
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/jobstate"
	"github.com/mpiguard/mpiguard/internal/reservations"
)

// Reasons an entry is released, in events and the released metric.
const (
	ReasonPodsCreated      = "PodsCreated"
	ReasonSuspended        = "Suspended"
	ReasonFinished         = "Finished"
	ReasonDeleted          = "Deleted"
	ReasonNeverCreated     = "NeverCreated"
	ReasonResumeNotApplied = "ResumeNotApplied"
)

// retirement is what to do with one entry.
type retirement struct {
	// release is the reason to release the entry, "" to keep it.
	release string
	// confirm: the cache alone cannot tell; read the TrainJob live and decide again.
	confirm bool
	// recheck is when to look again if nothing else happens (0: on the next event).
	recheck time.Time
}

// clockSkew is how far the clock of the replica that wrote an entry's
// holdUntil may run ahead of the leader's, which compares it: an entry is
// taken on trust that much past its grace, never released early.
const clockSkew = 5 * time.Second

// retirementFor is the pure decision for entry e, given its TrainJob as last seen
// (nil when absent) and, per replicated job, its pods that exist. live says
// whether job was read from the apiserver: only then may the absence of the
// job, or a resume that never landed, release the entry. deleted says that
// the deletion of the job with the entry's UID was seen: it existed and is
// gone, so its entry goes at once instead of after its grace (a user who
// deletes a job still waiting for its pods and submits it again is not
// refused for the quota the deleted one held).
func retirementFor(e *v1alpha1.ReservationEntry, job *trainer.TrainJob, pods map[string]int32, now time.Time, live, deleted bool) retirement {
	if job == nil || (e.UID != "" && job.UID != e.UID) {
		if deleted && e.UID != "" {
			return retirement{release: ReasonDeleted}
		}
		if now.Before(heldUntil(e)) {
			return retirement{recheck: heldUntil(e)}
		}
		if !live {
			return retirement{confirm: true}
		}
		return retirement{release: ReasonNeverCreated}
	}
	switch {
	case !job.DeletionTimestamp.IsZero():
		return retirement{release: ReasonDeleted}
	case jobstate.Finished(job):
		return retirement{release: ReasonFinished}
	case jobstate.Suspended(job):
		if e.Operation == v1alpha1.OperationUpdate && reservations.ResumePending(job) {
			// The resume this entry was admitted for has not landed (yet).
			if now.Before(heldUntil(e)) {
				return retirement{recheck: heldUntil(e)}
			}
			if !live {
				return retirement{confirm: true}
			}
			if job.Generation > e.ResumedFromGeneration {
				return retirement{release: ReasonSuspended} // changed since: resumed and suspended again
			}
			return retirement{release: ReasonResumeNotApplied}
		}
		return retirement{release: ReasonSuspended}
	}
	for _, p := range e.Parts {
		if pods[p.ReplicatedJob] < p.Pods {
			return retirement{}
		}
	}
	return retirement{release: ReasonPodsCreated}
}

// heldUntil is when entry e stops being taken on trust on this replica's
// clock: its holdUntil plus clockSkew.
func heldUntil(e *v1alpha1.ReservationEntry) time.Time { return e.HoldUntil.Add(clockSkew) }
