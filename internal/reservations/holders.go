package reservations

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/jobstate"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
)

// Outstanding is what the entries of res still reserve: each entry's
// reservation reduced by its job's pods that exist. Reservations whose pods
// all exist hold nothing and are left out.
func Outstanding(res *v1alpha1.QuotaReservation, existing Existing) []quota.Reservation {
	var out []quota.Reservation
	for i, r := range store.Reservations(res) {
		e := &res.Spec.Entries[i]
		if r.Parts = quota.Missing(r.Parts, existing.Of(e.TrainJob, e.UID)); len(r.Parts) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// Unconfirmed counts the entries of res held on trust: admitted creates whose
// TrainJob (that name with that UID) is not among jobs, and admitted resumes
// that have not landed (their job is missing, or still suspended). A create
// or resume the apiserver then refused stays unconfirmed until its grace
// ends; admission caps how many a namespace may have at once.
func Unconfirmed(res *v1alpha1.QuotaReservation, jobs []trainer.TrainJob) int {
	seen := make(map[string]*trainer.TrainJob, len(jobs))
	for i := range jobs {
		seen[jobs[i].Name+"/"+string(jobs[i].UID)] = &jobs[i]
	}
	n := 0
	for i := range res.Spec.Entries {
		e := &res.Spec.Entries[i]
		job := seen[e.TrainJob+"/"+string(e.UID)]
		if job == nil || (e.Operation == v1alpha1.OperationUpdate && ResumePending(job)) {
			n++
		}
	}
	return n
}

// ResumePending says whether the resume an entry was admitted for may
// still land on job: the job is suspended. Not only at the generation the
// resume updated: Kueue resumes in two writes, its placement first (a new
// generation, still suspended), then spec.suspend, and an entry released
// between them would give the job's quota to another job just before its
// resume. A job resumed and suspended again is told apart only once the
// entry's grace has passed (the retiring controller).
func ResumePending(job *trainer.TrainJob) bool {
	return jobstate.Suspended(job)
}
