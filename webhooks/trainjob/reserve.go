package trainjob

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/policies/engine"
	"github.com/mpiguard/mpiguard/policies/quota"
	"github.com/mpiguard/mpiguard/policies/quota/api/v1alpha1"
	"github.com/mpiguard/mpiguard/policies/quota/reservations"
)

// reservationPolicy names denials that come from recording the reservation,
// not from a policy.
const reservationPolicy = "quota-reservation"

// maxReservationAttempts bounds the decide-and-write rounds of one request.
// Within a process decisions in a namespace are serialised, so a lost write
// means another replica wrote first; a handful of rounds is plenty.
const maxReservationAttempts = 10

// reservationBudget is how long a request may spend waiting for its turn and
// deciding before it stops starting new rounds: well inside the webhook's
// timeoutSeconds (5), so the apiserver gets an answer that says to retry
// rather than a timeout.
const reservationBudget = 3500 * time.Millisecond

// decideReserving decides a request that lets a job create pods (a create that
// is not suspended, a resume) and, when it is allowed and charges a quota,
// records its reservation before answering. Quotas, pods and reservations are
// read together once the namespace's turn has come: reservations first, then
// pods (the cache: a pod it misses is counted twice, never not at all), then
// quotas live (so status.used counts every pod whose entry has been retired).
func (v Validator) decideReserving(ctx context.Context, req admission.Request, ev *evaluation) admission.Response {
	ns := ev.job.Namespace
	deadline := time.Now().Add(reservationBudget)
	unlock := v.reservations.Lock(ns)
	defer unlock()
	ev.request.RecordLater = true
	live := false
	for attempt := 1; ; attempt++ {
		res, err := v.reservations.Get(ctx, ns, live)
		if err != nil {
			return failClosed(err)
		}
		quotas, holders, err := v.quotaState(ctx, ev, res)
		if err != nil {
			return failClosed(err)
		}
		ev.request.Quotas, ev.request.Reserved = quotas, holders
		d, err := v.engine.Decide(ctx, ev.request)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		if !d.Allowed && !live {
			// Deny only on what the apiserver holds now: the cache, or this
			// process's memory of its last write, may still show an entry
			// that has been released since.
			live = true
			continue
		}
		parts := quota.PartsOf(ev.request.View, quotas)
		if !d.Allowed || ev.request.DryRun || len(parts) == 0 {
			return v.respond(ev, d)
		}
		err = v.reservations.Put(ctx, res, v.entry(req, ev, parts))
		v.metrics.observeWrite(err)
		if err == nil {
			return v.respond(ev, d)
		}
		live = true
		if !reservations.Retryable(err) || attempt >= maxReservationAttempts || time.Now().After(deadline) {
			d.Allowed = false
			d.Violations = append(d.Violations, engine.Violation{
				Policy: reservationPolicy, Action: engine.EnforceDeny, Field: "spec.trainer",
				Message: fmt.Sprintf("mpiguard could not record the quota this TrainJob needs in namespace %s (%d attempts; last: %v), so nothing was reserved; retry the request", ns, attempt, err),
			})
			return v.respond(ev, d)
		}
	}
}

// quotaState reads, for a decision in ev's namespace, the ResourceQuotas (live)
// and what is held against them: every entry of res, and TrainJobs that will
// create pods but have no entry (admitted before mpiguard kept reservations, or
// while its webhook was bypassed), each less the pods that exist.
func (v Validator) quotaState(ctx context.Context, ev *evaluation, res *v1alpha1.QuotaReservation) ([]corev1.ResourceQuota, []engine.Reservation, error) {
	ns := ev.job.Namespace
	var pods corev1.PodList
	if err := v.cluster.reader.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return nil, nil, fmt.Errorf("listing the pods of %q: %w", ns, err)
	}
	var quotas corev1.ResourceQuotaList
	if err := v.cluster.live.List(ctx, &quotas, client.InNamespace(ns)); err != nil {
		return nil, nil, fmt.Errorf("listing the ResourceQuotas of %q: %w", ns, err)
	}
	existing := reservations.ExistingPods(pods.Items)
	holders := reservations.Holders(res, ev.job.Name, existing)
	var jobs trainer.TrainJobList
	if err := v.cluster.reader.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		return nil, nil, fmt.Errorf("listing the TrainJobs of %q: %w", ns, err)
	}
	for i := range jobs.Items {
		other := &jobs.Items[i]
		if other.Name == ev.job.Name || reservations.Has(res, other.Name) || !reservations.StartsPods(other) {
			continue
		}
		view, err := v.pendingView(ctx, other, ev.nsc)
		if err != nil {
			if isRuntimeGone(err) {
				// A job whose runtime is gone creates no pods: it holds nothing.
				continue
			}
			return nil, nil, fmt.Errorf("rendering TrainJob %s, which holds quota in %q: %w", other.Name, ns, err)
		}
		if parts := quota.Missing(quota.PartsOf(view, quotas.Items), existing[other.Name]); len(parts) > 0 {
			holders = append(holders, engine.Reservation{TrainJob: ns + "/" + other.Name, Parts: parts})
		}
	}
	return quotas.Items, holders, nil
}

// entry is the reservation of an allowed request.
func (v Validator) entry(req admission.Request, ev *evaluation, parts []v1alpha1.ReservedPart) v1alpha1.ReservationEntry {
	now := time.Now()
	e := v1alpha1.ReservationEntry{
		TrainJob:   ev.job.Name,
		UID:        ev.job.UID,
		RequestUID: req.UID,
		Operation:  v1alpha1.OperationCreate,
		AdmittedAt: metav1.NewTime(now),
		HoldUntil:  metav1.NewTime(now.Add(v.grace)),
		Parts:      parts,
	}
	if req.Operation == admissionv1.Update {
		e.Operation = v1alpha1.OperationUpdate
		e.ResumedFromGeneration = ev.old.Generation
	}
	return e
}

// respond records the final decision and answers with it.
func (v Validator) respond(ev *evaluation, d *engine.Decision) admission.Response {
	v.engine.Record(ev.request, d)
	warns := warnings(d.Warnings())
	if !d.Allowed {
		return admission.Denied(denialMessage(ev.job, d.Denials())).WithWarnings(warns...)
	}
	return admission.Allowed("").WithWarnings(warns...)
}

// failClosed answers a decision whose inputs could not be read: denied, with
// the reason and what to do.
func failClosed(err error) admission.Response {
	return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("mpiguard could not read what the namespace's quotas hold (%w); nothing was admitted, retry the request", err))
}

func isRuntimeGone(err error) bool {
	var gone *runtimeNotFoundError
	return apierrors.IsNotFound(err) || errors.As(err, &gone)
}
