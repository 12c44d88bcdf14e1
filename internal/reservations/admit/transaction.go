package admit

import (
	"context"
	"errors"
	"fmt"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/reservations"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
)

// maxAttempts bounds the decide-and-write rounds of one request. A
// process's own decisions in a namespace never conflict with each other
// (batches), so a lost write means another replica wrote first.
const maxAttempts = 10

// decideBatch decides the requests of one namespace together. Each round
// reads the namespace's state once — reservations first, then pods (the
// cache: a pod it misses is counted twice, never not at all), then quotas live
// (so status.used counts every pod whose entry has been retired) — decides each
// request in arrival order against that state plus what the requests before it
// in the round reserve, and writes every new entry in one update carrying the
// resourceVersion read. Requests are answered only once that write succeeded.
// A lost write (another replica wrote first) sends the round's allowed
// requests to a new round on a live read; a request denied on the cache's
// state is decided again on a live read before its denial stands.
func (a *Admitter) decideBatch(ns string, batch []*waiting) {
	// The batch's reads and write serve every request in it: they are not
	// bound to any one request's context.
	ctx, cancel := context.WithTimeout(context.Background(), reservationBudget)
	defer cancel()
	nsc, err := a.cluster.Namespace(ctx, ns)
	if err != nil {
		failAll(batch, unavailable(err))
		return
	}
	pending := batch
	live := false
	// limit is how many requests a round decides. A round whose write lost
	// halves it for the next: the other replica's rounds are then no longer
	// shorter than this one's, so this replica wins its share of the races
	// instead of losing every one with a large batch.
	limit := maxBatch
	var lastErr error
	for len(pending) > 0 {
		pending = expire(pending, lastErr)
		if len(pending) == 0 {
			return
		}
		round, rest := pending[:min(len(pending), limit)], pending[min(len(pending), limit):]
		res, err := a.store.Get(ctx, ns, live)
		if err != nil {
			failAll(pending, unavailable(err))
			return
		}
		state, unconfirmed, err := reservations.ReadState(ctx, a.cluster.Reader, a.cluster.Live, ns, res, a.pipeline.StoredRenderer(a.cluster, nsc), a.maxUnconfirmed > 0)
		if err != nil {
			failAll(pending, a.unavailableState(err))
			return
		}
		// One quota state for the decisions between two changes of the
		// reservations: what they hold is built once for all of them.
		judged := state
		var again, writing []*waiting
		var records []store.Record
		for _, d := range round {
			d.rounds++
			if err := a.judge(ctx, d, judged); err != nil {
				d.fail(err)
				continue
			}
			job := d.req.Job
			switch allowed := d.evaluation.Decision.Allowed; {
			case !allowed && !live:
				// Deny only on what the apiserver holds now: the cache, or
				// this process's memory of its last write, may still show
				// an entry that has been released since.
				again = append(again, d)
				continue
			case !allowed || job.DryRun:
				d.answer()
				continue
			}
			// Jobs are held whenever a quota exists, whatever it limits
			// now: each decision charges the parts against the quotas of
			// its time, so a quota created while the job waits counts it.
			parts := quota.PartsOf(d.evaluation.View)
			if len(parts) == 0 || len(state.Quotas) == 0 {
				d.answer()
				continue
			}
			if done := d.ended(); done != "" {
				d.refuse(done)
				continue
			}
			r := a.record(d, parts)
			if r.Entry.Operation == v1alpha1.OperationUpdate {
				if msg := a.confirmUpdate(ctx, job); msg != "" {
					d.refuse(msg)
					continue
				}
			}
			if n := len(res.Spec.Entries) + len(records); n >= store.MaxEntries && !store.Has(res, job.TrainJob) {
				if live { // as a denial: the entries seen may have been released since
					d.refuse(full(ns, n))
				} else {
					again = append(again, d)
				}
				continue
			}
			if a.maxUnconfirmed > 0 && unconfirmed >= a.maxUnconfirmed {
				// Refused only on a live read, as a denial is: the
				// entries seen may have been released since.
				if live {
					d.refuse(a.tooManyUnconfirmed(ns, unconfirmed))
				} else {
					again = append(again, d)
				}
				continue
			}
			unconfirmed++ // held on trust until its create or resume lands
			records = append(records, r)
			writing = append(writing, d)
			// The requests after it in this round see its reservation.
			mine := []quota.Reservation{{TrainJob: ns + "/" + job.TrainJob.Name, UID: job.TrainJob.UID, Parts: parts}}
			quota.ChargeAgainst(mine, state.Quotas)
			judged = input.NewQuotaState(state.Quotas, append(input.WithoutJob(judged.Reservations, mine[0].TrainJob, mine[0].UID), mine...), state.Uncounted)
		}
		if len(records) > 0 {
			err = a.store.Put(ctx, res, records...)
			observeWrite(err)
			switch {
			case err == nil:
				limit = maxBatch
				for _, d := range writing {
					d.answer()
				}
			case store.Retryable(err):
				lastErr = err
				limit = max(1, len(writing)/2)
				again = append(writing, again...)
			default:
				for _, d := range writing {
					d.refuse(notRecorded(ns, d.rounds, err))
				}
			}
		}
		pending, live = append(again, rest...), true
	}
}

// judge decides d against a round's quota state: its prepared evaluation
// judged by the policies, nothing read or rendered again.
func (a *Admitter) judge(ctx context.Context, d *waiting, state *input.QuotaState) error {
	v, err := a.pipeline.Judge(ctx, d.req.Prepared, state)
	if err != nil {
		return err
	}
	d.evaluation = v
	return nil
}

// expire answers the requests whose budget is spent or that lost their write
// too often, and returns the others.
func expire(pending []*waiting, lastErr error) []*waiting {
	now := time.Now()
	var out []*waiting
	for _, d := range pending {
		if d.rounds > 0 && (now.After(d.deadline) || d.rounds >= maxAttempts) {
			d.refuse(notRecorded(d.req.Job.TrainJob.Namespace, d.rounds, lastErr))
			continue
		}
		out = append(out, d)
	}
	return out
}

// record is the reservation of an allowed request, as the store writes it.
func (a *Admitter) record(d *waiting, parts []quota.Part) store.Record {
	now := time.Now()
	job := d.req.Job
	e := v1alpha1.ReservationEntry{
		TrainJob:   job.TrainJob.Name,
		UID:        job.TrainJob.UID,
		RequestUID: d.req.ReviewUID,
		Operation:  v1alpha1.OperationCreate,
		AdmittedAt: metav1.NewTime(now),
		HoldUntil:  metav1.NewTime(now.Add(a.grace)),
	}
	if job.Operation == engine.Update {
		e.Operation = v1alpha1.OperationUpdate
		e.ResumedFromGeneration = job.OldTrainJob.Generation
	}
	return store.Record{Entry: e, Parts: parts}
}

// confirmUpdate reads the TrainJob an UPDATE is for from the apiserver
// before its entry is written: it must exist with the request's UID, still
// at the generation the request updates. A review claiming a resume of a
// job that does not exist (forged, or stale: the job was deleted or changed
// since) writes nothing. It says why not, "" when the entry may be written.
func (a *Admitter) confirmUpdate(ctx context.Context, r *pipeline.Request) string {
	reader := a.cluster.Live
	if reader == nil {
		reader = a.cluster.Reader
	}
	want, old := r.TrainJob, r.OldTrainJob
	got := &trainer.TrainJob{}
	err := reader.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("TrainJob %s/%s does not exist, so its update reserves nothing", want.Namespace, want.Name)
	case err != nil:
		return fmt.Sprintf("mpiguard could not read TrainJob %s/%s to confirm the update (%v), so nothing was reserved; retry the request", want.Namespace, want.Name, err)
	case got.UID != want.UID:
		return fmt.Sprintf("TrainJob %s/%s is another job now (UID %s, the update is for %s), so the update reserves nothing", want.Namespace, want.Name, got.UID, want.UID)
	case got.Generation != old.Generation:
		return fmt.Sprintf("TrainJob %s/%s changed while mpiguard decided its update (generation %d, the update was of %d), so nothing was reserved; retry the request", want.Namespace, want.Name, got.Generation, old.Generation)
	}
	return ""
}

// unavailable is the error of a decision whose inputs could not be read.
func unavailable(err error) error {
	return &UnavailableError{fmt.Errorf("mpiguard could not read what the namespace's quotas hold (%w); nothing was admitted, retry the request", err)}
}

// ReasonChargeUnknown is the reason of the Warning Event on a job whose
// charge is unknown.
const ReasonChargeUnknown = "QuotaChargeUnknown"

// unavailableState is unavailable(err) for a quota state that could not
// be read, except that a stored job whose charge cannot be known is named in
// the answer, with what unblocks the namespace, and gets a Warning Event
// saying why its namespace is blocked.
func (a *Admitter) unavailableState(err error) error {
	var unknown *reservations.UnknownChargeError
	if !errors.As(err, &unknown) {
		return unavailable(err)
	}
	job := unknown.Job
	if a.recorder != nil {
		a.recorder.Eventf(job, nil, corev1.EventTypeWarning, ReasonChargeUnknown, "Admit",
			"mpiguard cannot tell what this TrainJob charges the quotas of namespace %s (%v), so every TrainJob create or resume there that starts pods is refused until it has a JobSet, is suspended or finished, or is deleted; fix its runtime or delete it",
			job.Namespace, unknown.Err)
	}
	return &UnavailableError{fmt.Errorf("TrainJob %s/%s will create pods, but mpiguard cannot tell what it charges the namespace's quotas (%w), so no decision here can be exact and nothing was admitted: retry once that job has a JobSet, or ask its owner to fix its runtime or delete it (Event %s on it)",
		job.Namespace, job.Name, unknown.Err, ReasonChargeUnknown)}
}

func failAll(ds []*waiting, err error) {
	for _, d := range ds {
		d.fail(err)
	}
}
