package reservations

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainjobutil "github.com/kubeflow/trainer/v2/pkg/util/trainjob"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/quota"
)

// Holders is what the entries of res still hold: each entry's parts reduced
// by its job's pods that exist. Entries whose pods all exist hold nothing and
// are left out.
func Holders(res *v1alpha1.QuotaReservation, existing Existing) []quota.Holder {
	var out []quota.Holder
	for _, e := range res.Spec.Entries {
		if parts := quota.Missing(e.Parts, existing.Of(e.TrainJob, e.UID)); len(parts) > 0 {
			out = append(out, quota.Holder{TrainJob: res.Spec.Namespace + "/" + e.TrainJob, UID: e.UID, Parts: parts})
		}
	}
	return out
}

// Has says whether res has an entry for job: its name and UID. An entry of
// another UID was left by a create under the same name, and is another job.
func Has(res *v1alpha1.QuotaReservation, job *trainer.TrainJob) bool {
	for i := range res.Spec.Entries {
		if SameJob(&res.Spec.Entries[i], job.Name, job.UID) {
			return true
		}
	}
	return false
}

// SameJob says whether entry e is of the TrainJob name with uid. An entry
// without a UID (none was known when it was written) is its name's.
func SameJob(e *v1alpha1.ReservationEntry, name string, uid types.UID) bool {
	return e.TrainJob == name && (e.UID == "" || e.UID == uid)
}

// StartsPods says whether a stored TrainJob will still create pods here: not
// suspended, not being deleted, not finished, and not handed to another
// controller (MultiKueue runs its pods on another cluster).
func StartsPods(job *trainer.TrainJob) bool {
	if ptr.Deref(job.Spec.Suspend, false) || !job.DeletionTimestamp.IsZero() || trainjobutil.IsManagedByExternalController(job) {
		return false
	}
	return !Finished(job)
}

// Finished says whether a TrainJob completed or failed.
func Finished(job *trainer.TrainJob) bool {
	return meta.IsStatusConditionTrue(job.Status.Conditions, trainer.TrainJobComplete) ||
		meta.IsStatusConditionTrue(job.Status.Conditions, trainer.TrainJobFailed)
}

// Unconfirmed counts the entries of res held on trust: admitted creates whose
// TrainJob (that name with that UID) is not among jobs, and admitted resumes
// that have not landed (their job is missing, or still suspended). A create or resume the apiserver then
// refused stays unconfirmed until its grace ends; admission caps how many a
// namespace may have at once.
func Unconfirmed(res *v1alpha1.QuotaReservation, jobs []trainer.TrainJob) int {
	seen := make(map[string]*trainer.TrainJob, len(jobs))
	for i := range jobs {
		seen[jobs[i].Name+"/"+string(jobs[i].UID)] = &jobs[i]
	}
	n := 0
	for i := range res.Spec.Entries {
		e := &res.Spec.Entries[i]
		job := seen[e.TrainJob+"/"+string(e.UID)]
		if job == nil || (e.Operation == v1alpha1.OperationUpdate && resumePending(e, job)) {
			n++
		}
	}
	return n
}

// resumePending says whether the resume entry e was admitted for may still
// land on job: the job is suspended. Not only at the generation the resume
// updated: Kueue v0.17 resumes in two writes, its placement first (a new
// generation, still suspended), then spec.suspend, and an entry released
// between them would give the job's quota to another job just before its
// resume (seen in the Kueue suite under load). A job resumed and suspended
// again is told apart only once its grace has passed (decide).
func resumePending(_ *v1alpha1.ReservationEntry, job *trainer.TrainJob) bool {
	return ptr.Deref(job.Spec.Suspend, false)
}
