// Package admit is the quota ledger's admission transaction (Admitter): a
// TrainJob that is about to start pods is judged against its namespace's
// quota state (reservations.ReadState, pipeline.Judge) and, when allowed,
// its reservation written to the store (internal/reservations/store) with
// the resourceVersion read before the answer. Requests of one namespace are
// decided in batches (batch.go) and refused, as denials, when their entry
// cannot be written (refusals.go).
package admit

import (
	"context"
	"fmt"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
)

// Admitter is the quota reservation transaction, the one place a job that
// is about to start pods (a create that is not suspended, a resume, the
// resume the Kueue check answers for) is judged against what its
// namespace's quotas hold and its reservation written: read the state
// (reservation, pods, quotas, stored jobs), judge with the pipeline, write
// with the resourceVersion read, retry on conflict, answer. The TrainJob
// webhook and the Kueue AdmissionCheck call Admit; nothing else writes
// entries for admission. Everything in a process shares one Admitter, so its
// decisions in a namespace are batched together and never conflict with
// each other (batch.go).
type Admitter struct {
	store    *store.Store
	cluster  pipeline.ClientCluster
	pipeline *pipeline.Pipeline
	// grace is how long an entry is taken on trust before its TrainJob must
	// show (or its resume land).
	grace time.Duration
	// maxUnconfirmed caps the entries a namespace holds on trust (0: no cap).
	maxUnconfirmed int
	// recorder writes the Warning Event on a job whose charge is unknown
	// (nil: none).
	recorder events.EventRecorder
	batches  *batches[*waiting]
}

// DefaultMaxUnconfirmed is the default cap of entries a namespace holds on
// trust (--max-unconfirmed-reservations). It is far above what a burst of
// real submits leaves unconfirmed at once (a create's TrainJob appears
// within milliseconds of its admission), and keeps a QuotaReservation
// object far below etcd's object size limit.
const DefaultMaxUnconfirmed = 500

// AdmitterOptions configures an Admitter.
type AdmitterOptions struct {
	// Grace is how long an entry is taken on trust before its TrainJob must
	// exist (default 30s).
	Grace time.Duration
	// MaxUnconfirmed caps, per namespace, the entries held on trust:
	// admitted creates whose TrainJob has not appeared, resumes not landed
	// (0: no cap).
	MaxUnconfirmed int
	// Recorder writes a Warning Event on a stored job whose charge cannot
	// be known (UnknownChargeError), which fails its namespace's decisions
	// closed; nil: no Events.
	Recorder events.EventRecorder
}

// NewAdmitter returns the transaction over store (the QuotaReservations),
// cluster (what a decision reads) and p (what judges).
func NewAdmitter(st *store.Store, cluster pipeline.ClientCluster, p *pipeline.Pipeline, opts AdmitterOptions) *Admitter {
	if opts.Grace == 0 {
		opts.Grace = 30 * time.Second
	}
	a := &Admitter{store: st, cluster: cluster, pipeline: p, grace: opts.Grace, maxUnconfirmed: max(opts.MaxUnconfirmed, 0), recorder: opts.Recorder}
	a.batches = newBatches(a.decideBatch)
	return a
}

// Request is one decision for the transaction.
type Request struct {
	// Job is the pipeline's request: a CREATE or an UPDATE that starts pods.
	Job *pipeline.Request
	// Prepared is Job through pipeline.Prepare, governed: stage Validate for
	// the validating webhook (the mutating webhook ran before it), Admit
	// for a caller that judges both passes (the Kueue check). The
	// transaction only judges it, against each quota state it reads.
	Prepared *pipeline.Evaluation
	// ReviewUID is the AdmissionReview's UID, kept on the entry; "" when the
	// decision is not an admission review's.
	ReviewUID types.UID
}

// UnavailableError says the transaction could not decide: the namespace's
// state could not be read, or the request ended first. Nothing was
// reserved; the caller answers "retry" (the webhook with 503).
type UnavailableError struct{ err error }

func (e *UnavailableError) Error() string { return e.err.Error() }
func (e *UnavailableError) Unwrap() error { return e.err }

// reservationBudget is how long a request may take, from its arrival, before
// no new round is started for it: inside the validating webhook's
// timeoutSeconds (10), so the apiserver gets an answer that says to retry
// rather than a timeout. The webhook's timeout is longer than the usual 5 s
// because a quota decision waits for its namespace's turn: a burst of
// hundreds of submits into one namespace queues there.
const reservationBudget = 8 * time.Second

// Admit decides req and, when it is allowed and charges a quota, writes its
// reservation before answering with the final evaluation: when the
// transaction refused a job the policies allowed (its entry could not be
// written, a cap, a stale update), the refusal is one of its denials
// (policy quota-reservation) and nothing was reserved. The request joins its
// namespace's next batch and waits for its answer. An error is either an
// *UnavailableError (nothing decided: retry) or the pipeline's (the job
// could not be judged).
func (a *Admitter) Admit(ctx context.Context, req Request) (*pipeline.Evaluation, error) {
	if !req.Prepared.Governed {
		return req.Prepared, nil // nothing to judge or hold
	}
	req.Job.RecordLater = true
	d := &waiting{ctx: ctx, req: req, deadline: time.Now().Add(reservationBudget), done: make(chan reply, 1)}
	a.batches.add(req.Job.TrainJob.Namespace, d)
	select {
	case out := <-d.done:
		return out.evaluation, out.err
	case <-ctx.Done():
		// The batch still answers d (into its buffer) and writes no entry
		// for it: it checks the context before each write.
		return nil, &UnavailableError{fmt.Errorf("the request ended before mpiguard decided it: %w", ctx.Err())}
	}
}

// waiting is one request waiting for its namespace's batch.
type waiting struct {
	// ctx is the request's: once it is done, its caller has answered and
	// nothing may be written for it.
	ctx      context.Context
	req      Request
	deadline time.Time
	// evaluation, once judged.
	evaluation *pipeline.Evaluation
	// rounds it took part in.
	rounds int
	done   chan reply
}

// reply is the transaction's answer to one request: its final evaluation,
// or why it could not decide.
type reply struct {
	evaluation *pipeline.Evaluation
	err        error
}

// answer gives d its final evaluation.
func (d *waiting) answer() { d.done <- reply{evaluation: d.evaluation} }

// fail answers d with err.
func (d *waiting) fail(err error) { d.done <- reply{err: err} }

// ended says why nothing may be written for d any more, "" while it may:
// its request ended (the apiserver gave up on it, or its caller answered),
// or its decision budget is spent. A write after that would hold quota for
// a request whose outcome nobody waits for.
func (d *waiting) ended() string {
	switch {
	case d.ctx.Err() != nil:
		return fmt.Sprintf("the request ended before its quota reservation was written (%v), so nothing was reserved; retry the request", d.ctx.Err())
	case time.Now().After(d.deadline):
		return fmt.Sprintf("mpiguard's decision budget (%s) ran out before the quota reservation was written, so nothing was reserved; retry the request", reservationBudget)
	}
	return ""
}

// Grace is how long an entry is taken on trust before its TrainJob must
// show or its resume land.
func (a *Admitter) Grace() time.Duration { return a.grace }

// Entry returns the entry job (same name and UID) holds in its namespace's
// QuotaReservation as this process last saw it, nil when it holds none.
func (a *Admitter) Entry(ctx context.Context, job *trainer.TrainJob) (*v1alpha1.ReservationEntry, error) {
	res, err := a.store.Get(ctx, job.Namespace, false)
	if err != nil {
		return nil, fmt.Errorf("reading the quota reservations of %q: %w", job.Namespace, err)
	}
	for i := range res.Spec.Entries {
		if e := &res.Spec.Entries[i]; store.SameJob(e, job.Name, job.UID) {
			return e, nil
		}
	}
	return nil, nil
}
