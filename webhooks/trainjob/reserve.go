package trainjob

import (
	"context"
	"fmt"
	"net/http"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/policies/engine"
	"github.com/mpiguard/mpiguard/policies/pipeline"
	"github.com/mpiguard/mpiguard/policies/quota"
	"github.com/mpiguard/mpiguard/policies/quota/api/v1alpha1"
	"github.com/mpiguard/mpiguard/policies/quota/reservations"
)

// reservationPolicy names denials that come from recording the reservation,
// not from a policy.
const reservationPolicy = "quota-reservation"

// maxReservationAttempts bounds the decide-and-write rounds of one request. A
// replica's own decisions in a namespace never conflict with each other
// (batches), so a lost write means another replica wrote first.
const maxReservationAttempts = 10

// reservationBudget is how long a request may take, from its arrival, before
// no new round is started for it: inside the validating webhook's
// timeoutSeconds (10), so the apiserver gets an answer that says to retry
// rather than a timeout. The webhook's timeout is longer than the usual 5 s
// because a quota decision waits for its namespace's turn: a burst of
// hundreds of submits into one namespace queues there (measured in
// docs/performance.md, "Burst").
const reservationBudget = 8 * time.Second

// quotaDecision is one request waiting for its namespace's batch.
type quotaDecision struct {
	// ctx is the request's: once it is done, its handler has answered and
	// nothing may be written for it.
	ctx      context.Context
	req      admission.Request
	r        *pipeline.Request
	deadline time.Time
	// verdict, once made.
	verdict *pipeline.Verdict
	// rounds it took part in.
	rounds int
	done   chan admission.Response
}

// decideReserving decides a request that lets a job create pods (a create that
// is not suspended, a resume) and, when it is allowed and charges a quota,
// records its reservation before answering. The request joins its namespace's
// next batch (batch.go) and waits for its answer.
func (v Validator) decideReserving(ctx context.Context, req admission.Request, r *pipeline.Request) admission.Response {
	r.RecordLater = true
	qd := &quotaDecision{ctx: ctx, req: req, r: r, deadline: time.Now().Add(reservationBudget), done: make(chan admission.Response, 1)}
	v.batches.add(r.TrainJob.Namespace, qd)
	select {
	case resp := <-qd.done:
		return resp
	case <-ctx.Done():
		// The batch still answers qd (into its buffer) and writes no
		// entry for it: it checks the context before each write.
		return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("the request ended before mpiguard decided it: %w", ctx.Err()))
	}
}

// decideBatch decides the quota decisions of one namespace together. Each
// round reads the namespace's state once — reservations first, then pods (the
// cache: a pod it misses is counted twice, never not at all), then quotas live
// (so status.used counts every pod whose entry has been retired) — decides each
// request in arrival order against that state plus what the requests before it
// in the round reserve, and writes every new entry in one update carrying the
// resourceVersion read. Requests are answered only once that write succeeded.
// A lost write (another replica wrote first) sends the round's allowed
// requests to a new round on a live read; a request denied on the cache's
// state is decided again on a live read before its denial stands.
func (v Validator) decideBatch(ns string, batch []*quotaDecision) {
	// The batch's reads and write serve every request in it: they are not
	// bound to any one request's context.
	ctx, cancel := context.WithTimeout(context.Background(), reservationBudget)
	defer cancel()
	nsc, err := v.cluster.Namespace(ctx, ns)
	if err != nil {
		v.answerAll(batch, failClosed(err))
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
		pending = v.expire(pending, lastErr)
		if len(pending) == 0 {
			return
		}
		round, rest := pending[:min(len(pending), limit)], pending[min(len(pending), limit):]
		res, err := v.reservations.Get(ctx, ns, live)
		if err != nil {
			v.answerAll(pending, failClosed(err))
			return
		}
		state, err := v.quotaState(ctx, ns, nsc, res)
		if err != nil {
			v.answerAll(pending, failClosed(err))
			return
		}
		quotas, holders := state.Quotas, state.Holders
		var again, writing []*quotaDecision
		var entries []v1alpha1.ReservationEntry
		for _, qd := range round {
			qd.rounds++
			verdict, err := v.judge(ctx, qd, quotas, holders)
			if err != nil {
				qd.answer(*refused(err))
				continue
			}
			if !verdict.Governed { // its runtime lost mlPolicy.mpi since
				qd.answer(admission.Allowed(""))
				continue
			}
			qd.verdict = verdict
			d := verdict.Decision
			switch {
			case !d.Allowed && !live:
				// Deny only on what the apiserver holds now: the cache, or
				// this process's memory of its last write, may still show
				// an entry that has been released since.
				again = append(again, qd)
				continue
			case !d.Allowed || qd.r.DryRun:
				qd.answer(v.respond(verdict))
				continue
			}
			// Jobs are held whenever a quota exists, whatever it limits
			// now: each decision charges the parts against the quotas of
			// its time, so a quota created while the job waits counts it.
			parts := quota.PartsOf(verdict.View)
			if len(parts) == 0 || len(quotas) == 0 {
				qd.answer(v.respond(verdict))
				continue
			}
			if done := qd.ended(); done != "" {
				qd.answer(v.refuse(qd, done))
				continue
			}
			e := v.entry(qd, parts)
			if e.Operation == v1alpha1.OperationUpdate {
				if msg, err := v.confirmUpdate(ctx, qd); err != nil || msg != "" {
					if err != nil {
						msg = fmt.Sprintf("mpiguard could not read TrainJob %s/%s to confirm the update (%v), so nothing was reserved; retry the request", ns, qd.r.TrainJob.Name, err)
					}
					qd.answer(v.refuse(qd, msg))
					continue
				}
			}
			if held := len(res.Spec.Entries) + len(entries); held >= reservations.MaxEntries {
				if live { // as a denial: the entries seen may have been released since
					qd.answer(v.full(qd, held))
				} else {
					again = append(again, qd)
				}
				continue
			}
			if v.maxUnconfirmed > 0 && state.Unconfirmed >= v.maxUnconfirmed {
				// Refused only on a live read, as a denial is: the
				// entries seen may have been released since.
				if live {
					qd.answer(v.tooManyUnconfirmed(qd, state.Unconfirmed))
				} else {
					again = append(again, qd)
				}
				continue
			}
			state.Unconfirmed++ // held on trust until its create or resume lands
			entries = append(entries, e)
			writing = append(writing, qd)
			// The requests after it in this round see its reservation.
			holders = append(pipeline.WithoutJob(holders, qd.r.TrainJob), engine.Reservation{TrainJob: ns + "/" + qd.r.TrainJob.Name, UID: qd.r.TrainJob.UID, Parts: parts})
		}
		if len(entries) > 0 {
			err = v.reservations.Put(ctx, res, entries...)
			v.metrics.observeWrite(err)
			switch {
			case err == nil:
				limit = maxBatch
				for _, qd := range writing {
					qd.answer(v.respond(qd.verdict))
				}
			case reservations.Retryable(err):
				lastErr = err
				limit = max(1, len(writing)/2)
				again = append(writing, again...)
			default:
				for _, qd := range writing {
					qd.answer(v.notRecorded(qd, err))
				}
			}
		}
		pending, live = append(again, rest...), true
	}
}

// judge decides qd against a round's quota state: through the whole
// pipeline the first time, then (a round after a lost write) only the
// decision again, on the job as rendered then.
func (v Validator) judge(ctx context.Context, qd *quotaDecision, quotas []corev1.ResourceQuota, holders []engine.Reservation) (*pipeline.Verdict, error) {
	if qd.verdict == nil {
		return v.pipeline.Run(ctx, pipeline.WithQuotaState(v.cluster, quotas, holders), qd.r, pipeline.Validate)
	}
	return v.pipeline.Requote(ctx, qd.r, qd.verdict, quotas, holders)
}

// expire answers the requests whose budget is spent or that lost their write
// too often, and returns the others.
func (v Validator) expire(pending []*quotaDecision, lastErr error) []*quotaDecision {
	now := time.Now()
	var out []*quotaDecision
	for _, qd := range pending {
		if qd.rounds > 0 && (now.After(qd.deadline) || qd.rounds >= maxReservationAttempts) {
			qd.answer(v.notRecorded(qd, lastErr))
			continue
		}
		out = append(out, qd)
	}
	return out
}

// notRecorded is the answer to a request whose reservation could not be
// written: denied (and logged so), nothing reserved, retry.
func (v Validator) notRecorded(qd *quotaDecision, err error) admission.Response {
	return v.refuse(qd, fmt.Sprintf("mpiguard could not record the quota this TrainJob needs in namespace %s (%d rounds; last: %v), so nothing was reserved; retry the request",
		qd.r.TrainJob.Namespace, qd.rounds, err))
}

// refuse denies a decided request for a reason of the reservation's, not a
// policy's: msg is added to its decision's violations.
func (v Validator) refuse(qd *quotaDecision, msg string) admission.Response {
	violation := engine.Violation{Policy: reservationPolicy, Action: engine.EnforceDeny, Field: "spec.trainer", Message: msg}
	if qd.verdict == nil { // not decided yet: nothing to add the reason to
		return admission.Denied(pipeline.ViolationLine(violation))
	}
	d := qd.verdict.Decision
	d.Allowed = false
	d.Violations = append(d.Violations, violation)
	return v.respond(qd.verdict)
}

// tooManyUnconfirmed is the answer to a request that would add an entry to a
// namespace that already has as many held on trust as --max-unconfirmed-reservations
// allows: creates admitted whose TrainJob has not appeared. A namespace cannot
// be filled with reservations that never materialise (a burst of forged
// reviews, or creates the apiserver refuses after admission); they are
// released after the grace, and then this request, retried, is decided.
func (v Validator) tooManyUnconfirmed(qd *quotaDecision, n int) admission.Response {
	unconfirmedRefusals.WithLabelValues(qd.r.TrainJob.Namespace).Inc()
	return v.refuse(qd, fmt.Sprintf("namespace %s already holds %d quota reservations of TrainJobs admitted but not yet created or resumed (limit %d; each is released %s after admission if its create or resume never lands), so nothing was reserved; retry in a few seconds. If this persists, admission reviews not followed by a create are reaching mpiguard: tell the platform team",
		qd.r.TrainJob.Namespace, n, v.maxUnconfirmed, v.grace))
}

// full is the answer to a request whose entry would not fit its namespace's
// QuotaReservation: as many jobs are admitted there and wait for their pods
// as one object keeps (reservations.MaxEntries).
func (v Validator) full(qd *quotaDecision, n int) admission.Response {
	fullRefusals.WithLabelValues(qd.r.TrainJob.Namespace).Inc()
	return v.refuse(qd, fmt.Sprintf("namespace %s already holds %d quota reservations of admitted TrainJobs whose pods do not exist yet, the most mpiguard keeps for one namespace, so nothing was reserved; retry once some of those jobs' pods exist (each entry goes as soon as they do)",
		qd.r.TrainJob.Namespace, n))
}

func (v Validator) answerAll(qds []*quotaDecision, resp admission.Response) {
	for _, qd := range qds {
		qd.answer(resp)
	}
}

func (qd *quotaDecision) answer(resp admission.Response) { qd.done <- resp }

// quotaState reads what a round of quota decisions in namespace ns reads
// (reservations.ReadState: the same state audit judges waiting jobs with).
func (v Validator) quotaState(ctx context.Context, ns string, nsc *pipeline.Namespace, res *v1alpha1.QuotaReservation) (reservations.State, error) {
	// Unconfirmed entries are counted only to enforce the cap.
	return reservations.ReadState(ctx, v.cluster.Reader, v.cluster.Live, ns, res, v.pipeline.StoredRenderer(v.cluster, nsc), v.maxUnconfirmed > 0)
}

// entry is the reservation of an allowed request.
func (v Validator) entry(qd *quotaDecision, parts []v1alpha1.ReservedPart) v1alpha1.ReservationEntry {
	now := time.Now()
	req, job := qd.req, qd.r.TrainJob
	e := v1alpha1.ReservationEntry{
		TrainJob:   job.Name,
		UID:        job.UID,
		RequestUID: req.UID,
		Operation:  v1alpha1.OperationCreate,
		AdmittedAt: metav1.NewTime(now),
		HoldUntil:  metav1.NewTime(now.Add(v.grace)),
		Parts:      parts,
	}
	if req.Operation == admissionv1.Update {
		e.Operation = v1alpha1.OperationUpdate
		e.ResumedFromGeneration = qd.r.OldTrainJob.Generation
	}
	return e
}

// respond records the final decision and answers with it.
func (v Validator) respond(verdict *pipeline.Verdict) admission.Response {
	v.pipeline.Record(verdict)
	return answer(verdict)
}

// failClosed answers a decision whose inputs could not be read: denied, with
// the reason and what to do.
func failClosed(err error) admission.Response {
	return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("mpiguard could not read what the namespace's quotas hold (%w); nothing was admitted, retry the request", err))
}

// ended says why nothing may be written for qd any more, "" while it may:
// its request ended (the apiserver gave up on it, or its handler answered),
// or its decision budget is spent. A write after that would hold quota for
// a request whose outcome nobody waits for.
func (qd *quotaDecision) ended() string {
	switch {
	case qd.ctx.Err() != nil:
		return fmt.Sprintf("the request ended before its quota reservation was written (%v), so nothing was reserved; retry the request", qd.ctx.Err())
	case time.Now().After(qd.deadline):
		return fmt.Sprintf("mpiguard's decision budget (%s) ran out before the quota reservation was written, so nothing was reserved; retry the request", reservationBudget)
	}
	return ""
}

// confirmUpdate reads the TrainJob an UPDATE is for from the apiserver
// before its entry is written: it must exist with the request's UID, still
// at the generation the request updates. A review claiming a resume of a
// job that does not exist (forged, or stale: the job was deleted or changed
// since) writes nothing. msg says why not; err when the read failed.
func (v Validator) confirmUpdate(ctx context.Context, qd *quotaDecision) (msg string, err error) {
	reader := v.cluster.Live
	if reader == nil {
		reader = v.cluster.Reader
	}
	want, old := qd.r.TrainJob, qd.r.OldTrainJob
	got := &trainer.TrainJob{}
	err = reader.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("TrainJob %s/%s does not exist, so its update reserves nothing", want.Namespace, want.Name), nil
	case err != nil:
		return "", err
	case got.UID != want.UID:
		return fmt.Sprintf("TrainJob %s/%s is another job now (UID %s, the update is for %s), so the update reserves nothing", want.Namespace, want.Name, got.UID, want.UID), nil
	case got.Generation != old.Generation:
		return fmt.Sprintf("TrainJob %s/%s changed while mpiguard decided its update (generation %d, the update was of %d), so nothing was reserved; retry the request", want.Namespace, want.Name, got.Generation, old.Generation), nil
	}
	return "", nil
}
