package trainjob

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/policies/engine"
	"github.com/mpiguard/mpiguard/policies/quota/reservations"
	"github.com/mpiguard/mpiguard/policies/render"
)

// admitter is the pipeline both webhooks share: decode, read the runtime and
// namespace context, render the JobView, and ask the policy engine.
type admitter struct {
	cluster  cluster
	renderer *render.Renderer
	engine   *engine.Engine
	views    *viewCache
	// reservations records the quota admitted jobs hold until their pods exist.
	reservations *reservations.Store
	// batches runs the quota decisions of each namespace in batches (batch.go).
	batches *batches[*quotaDecision]
	// grace is how long an entry is taken on trust before its TrainJob must show.
	grace time.Duration
	// maxUnconfirmed caps the entries a namespace holds on trust (0: no cap).
	maxUnconfirmed int
	metrics        webhookMetrics
}

// evaluation is one request on its way through the pipeline.
type evaluation struct {
	job, old *trainer.TrainJob
	governed bool
	request  *engine.Request
	// nsc is the namespace context the request was evaluated in.
	nsc *namespaceContext
}

// evaluate decodes req and prepares the engine request. A nil error with
// governed false means there is nothing to govern: not an MPI TrainJob, or an
// UPDATE that changes nothing the job runs. Allow it untouched.
func (a *admitter) evaluate(ctx context.Context, req admission.Request) (*evaluation, error) {
	ev := &evaluation{job: &trainer.TrainJob{}}
	if err := decodeTrainJob(req.Object, ev.job); err != nil {
		return nil, fmt.Errorf("decoding the TrainJob: %w", err)
	}
	if ev.job.Namespace == "" {
		ev.job.Namespace = req.Namespace
	}
	if req.Operation == admissionv1.Update {
		ev.old = &trainer.TrainJob{}
		if err := decodeTrainJob(req.OldObject, ev.old); err != nil {
			return nil, fmt.Errorf("decoding the stored TrainJob: %w", err)
		}
	}
	if ev.old != nil && !specChanged(ev.old, ev.job) {
		// Metadata-only updates (labels, finalizers, deletion) change nothing
		// that runs: evaluating them would let a policy tightened after
		// admission block the Trainer from removing its finalizer.
		return ev, nil
	}
	if ev.old != nil && onlySuspends(ev.old, ev.job) {
		// Switching a job to suspended is always allowed, even when it now
		// breaks a policy tightened since it was admitted: suspending stops
		// its pods, it starts nothing (Kueue preempts this way). Skipped by
		// both webhooks, so the mutating one adds nothing either. Resuming it
		// is evaluated in full (startsPods). The webhook configuration's
		// not-only-suspending matchCondition keeps these requests from
		// mpiguard in the first place; this is the same rule for a cluster
		// where they arrive anyway.
		return ev, nil
	}
	rt, err := a.cluster.runtimeOf(ctx, ev.job)
	if err != nil {
		return nil, err
	}
	if ev.governed = engine.Governs(rt); !ev.governed {
		return ev, nil
	}
	nsc, err := a.cluster.namespaceContext(ctx, ev.job.Namespace)
	if err != nil {
		return nil, err
	}
	ev.nsc = nsc
	view, err := a.renderer.Render(ctx, render.Input{TrainJob: ev.job, Runtime: rt, LimitRanges: nsc.LimitRanges, RuntimeClasses: nsc.RuntimeClasses,
		OwnManager: engine.AdmissionManager})
	if err != nil {
		return nil, err
	}
	ev.request = &engine.Request{
		Operation:   engine.Operation(req.Operation),
		User:        req.UserInfo.Username,
		Groups:      req.UserInfo.Groups,
		DryRun:      ptr.Deref(req.DryRun, false),
		TrainJob:    ev.job,
		OldTrainJob: ev.old,
		View:        view,
		Namespace:   nsc.Namespace,
		Quotas:      nsc.Quotas,
		Runtime: engine.RuntimeMeta{
			Kind:        rt.GetObjectKind().GroupVersionKind().Kind,
			Name:        rt.GetName(),
			Labels:      rt.GetLabels(),
			Annotations: rt.GetAnnotations(),
		},
	}
	return ev, nil
}

// governed runs evaluate for a webhook. It returns the evaluation of a
// governed TrainJob, or the final response when there is nothing to decide:
// an operation other than CREATE/UPDATE or a non-MPI TrainJob (allowed
// untouched), or a TrainJob that cannot be evaluated (rejected with the
// reason, never silently allowed).
func (a *admitter) governed(ctx context.Context, req admission.Request) (*evaluation, *admission.Response) {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		resp := admission.Allowed("")
		return nil, &resp
	}
	ev, err := a.evaluate(ctx, req)
	if err != nil {
		resp := admission.Errored(http.StatusForbidden, err)
		return nil, &resp
	}
	if !ev.governed {
		resp := admission.Allowed("")
		return nil, &resp
	}
	return ev, nil
}

// specChanged says whether an UPDATE changes what the TrainJob will run. A
// TrainJob being deleted changes nothing that matters any more.
func specChanged(old, job *trainer.TrainJob) bool {
	if job.DeletionTimestamp != nil {
		return false
	}
	return !equality.Semantic.DeepEqual(old.Spec, job.Spec)
}

// onlySuspends says whether an UPDATE switches the job to suspended and
// changes nothing else in spec. An update that suspends and also changes
// something else is evaluated like any other: the other change is the user's
// to justify, and the job would carry it on when resumed.
func onlySuspends(old, job *trainer.TrainJob) bool {
	if ptr.Deref(old.Spec.Suspend, false) || !ptr.Deref(job.Spec.Suspend, false) {
		return false
	}
	before := old.Spec.DeepCopy()
	before.Suspend = job.Spec.Suspend
	return equality.Semantic.DeepEqual(*before, job.Spec)
}

// staysSuspended says whether an UPDATE leaves the job suspended: it starts
// nothing now, and whatever it asks is decided when it is resumed.
func (ev *evaluation) staysSuspended() bool {
	return ev.old != nil && ptr.Deref(ev.old.Spec.Suspend, false) && ptr.Deref(ev.job.Spec.Suspend, false)
}

// startsPods says whether admitting this request lets the job create pods that
// it could not before: a new running job, or a suspended one being resumed
// (Kueue admits by flipping spec.suspend). Only these reserve quota.
func (ev *evaluation) startsPods() bool {
	if ptr.Deref(ev.job.Spec.Suspend, false) {
		return false
	}
	return ev.old == nil || ptr.Deref(ev.old.Spec.Suspend, false)
}

// denialMessage lists every denying violation: what, why and how to fix it
// come from the policies; the policy name and field path say where.
func denialMessage(job *trainer.TrainJob, vs []engine.Violation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "TrainJob %s/%s violates %d mpiguard polic%s:", job.Namespace, job.Name, len(vs), plural(len(vs), "y", "ies"))
	for _, v := range vs {
		b.WriteString("\n- ")
		b.WriteString(violationLine(v))
	}
	return b.String()
}

// warnings renders warn violations as admission warnings.
func warnings(vs []engine.Violation) []string {
	if len(vs) == 0 {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = violationLine(v)
	}
	return out
}

func violationLine(v engine.Violation) string {
	if v.Field == "" {
		return fmt.Sprintf("[%s] %s", v.Policy, v.Message)
	}
	return fmt.Sprintf("[%s] %s: %s", v.Policy, v.Field, v.Message)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
