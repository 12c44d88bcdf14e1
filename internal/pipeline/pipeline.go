package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/jobstate"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/networkpolicies"
)

// Stage is how much of admission a Run performs.
type Stage int

const (
	// Mutate is the mutating webhook's pass: the evaluation carries the
	// mutation and its patch, and no decision.
	Mutate Stage = iota
	// Validate is the validating webhook's pass: the job is judged as it
	// is (the apiserver has applied the mutating webhook's patch already).
	Validate
	// Admit is both passes one after the other, as the apiserver runs them:
	// the mutation is applied to a copy of the job, which is rendered again
	// and judged. `mpiguard check` and audit use it.
	Admit
)

func (s Stage) String() string {
	switch s {
	case Mutate:
		return "mutate"
	case Validate:
		return "validate"
	case Admit:
		return "admit"
	}
	return fmt.Sprintf("Stage(%d)", int(s))
}

// Request is one admission request for a TrainJob.
type Request struct {
	Operation engine.Operation
	// User and Groups identify who submitted (decision log, policies).
	User   string
	Groups []string
	DryRun bool
	// TrainJob is the object submitted, its namespace set; OldTrainJob the
	// stored one on UPDATE. Run never modifies either.
	TrainJob    *trainer.TrainJob
	OldTrainJob *trainer.TrainJob
	// Raw is TrainJob as the apiserver sent it. The patch is computed against
	// it, so fields the compiled Trainer types do not know (a newer
	// Trainer's) are kept. Nil: TrainJob's own JSON.
	Raw []byte
	// Audit judges the update even when it changes nothing the job runs (or
	// only suspends it): audit asks what today's policies say about a stored
	// job, as it is, which admission would not ask again.
	Audit bool
	// RecordLater leaves the decision out of the decision log and metrics:
	// the caller records the final one with Pipeline.Record (a quota
	// decision is final only once its reservation is written).
	RecordLater bool
}

// Evaluation is what the pipeline made of a request.
type Evaluation struct {
	// Governed is false when mpiguard's policies have nothing to say about
	// the request: not a CREATE or UPDATE, not an MPI TrainJob, a namespace
	// an admin exempted (ExemptLabel), an UPDATE that changes nothing the
	// job runs or only suspends it. Allow it
	// untouched; nothing else is set.
	Governed bool
	// TrainJob is the job as judged: in Admit, with the mutation applied.
	TrainJob *trainer.TrainJob
	// View is what TrainJob renders to with its runtime.
	View *render.JobView
	// Mutation and Patch (the JSON patch that applies Mutation to
	// Request.Raw, touching only mpiguard's own paths): Mutate and Admit.
	Mutation *engine.Mutation
	Patch    []jsonpatch.JsonPatchOperation
	// Decision: Validate and Admit.
	Decision *engine.Decision
	// NetworkPolicy says which per-job NetworkPolicy template the job gets
	// and what it leaves closed (networkpolicies.Describe), for a CREATE;
	// empty otherwise and when the pipeline describes none
	// (DescribeNetworkPolicies not called).
	NetworkPolicy string

	// request is what the engine decides (for Judge) or decided (for
	// Record); from is the pipeline's request it was prepared from.
	request *engine.Request
	from    *Request
}

// Allowed says whether the request may proceed: ungoverned, or allowed by
// the decision (a Mutate evaluation never denies).
func (v *Evaluation) Allowed() bool {
	return !v.Governed || v.Decision == nil || v.Decision.Allowed
}

// Quotas are the ResourceQuotas a judged evaluation was judged against (nil
// before Judge, or when ungoverned).
func (v *Evaluation) Quotas() []corev1.ResourceQuota {
	if v.request == nil || v.Decision == nil {
		return nil
	}
	return v.request.Input.Source().Quotas
}

// Pipeline turns admission requests into evaluations with one renderer and one
// policy engine. It is safe for concurrent use.
type Pipeline struct {
	renderer *render.Renderer
	engine   *engine.Engine
	stored   *storedViews
	// admitted is when the last admission request (not an audit) of a
	// governed job started to be judged, in Unix nanoseconds: audit gives
	// way to admission (LastAdmission).
	admitted atomic.Int64
	// networkPolicies are the per-job NetworkPolicy controller's options,
	// nil when verdicts describe no NetworkPolicy.
	networkPolicies *networkpolicies.Options
}

// DescribeNetworkPolicies makes every governed verdict of a CREATE say which
// NetworkPolicy template the job gets under opts, the controller's options,
// and what it leaves closed (Verdict.NetworkPolicy). Call it before the
// pipeline is used.
func (p *Pipeline) DescribeNetworkPolicies(opts networkpolicies.Options) {
	p.networkPolicies = &opts
}

// New returns a pipeline rendering with r and judging with e.
func New(r *render.Renderer, e *engine.Engine) *Pipeline {
	return &Pipeline{renderer: r, engine: e, stored: newStoredViews(storedViewsSize)}
}

// NewDefault returns a pipeline judging with the embedded policies and
// parameters, for callers with nothing to configure (tests, tools).
func NewDefault(ctx context.Context) (*Pipeline, error) {
	e, err := engine.NewDefault(ctx, engine.Options{})
	if err != nil {
		return nil, err
	}
	r, err := render.NewRenderer(ctx)
	if err != nil {
		return nil, err
	}
	return New(r, e), nil
}

// LastAdmission is when the pipeline last started to judge an admission
// request (anything but an audit) of a governed job; zero when it never did. Audit, which
// shares the leader's CPU with the webhooks, slows down while they are busy.
func (p *Pipeline) LastAdmission() time.Time {
	if n := p.admitted.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Engine is the policy engine the pipeline judges with.
func (p *Pipeline) Engine() *engine.Engine { return p.engine }

// Run is admission in one call: Prepare, then (in stage Validate or
// Admit) Judge against the quotas the namespace has, nothing reserved of
// them. The mutating webhook goes through here. An error means the request
// could not be evaluated: reject it with the error, never allow it.
func (p *Pipeline) Run(ctx context.Context, c Cluster, req *Request, stage Stage) (*Evaluation, error) {
	return p.RunAgainst(ctx, c, req, stage, nil)
}

// RunAgainst is Run judged against quota state state (Judge; nil: the
// namespace's quotas, nothing reserved): audit, the Kueue check's
// placement advice and `mpiguard check` go through here; the quota
// reservation transaction calls the two steps itself, with the state it
// read.
func (p *Pipeline) RunAgainst(ctx context.Context, c Cluster, req *Request, stage Stage, state *input.QuotaState) (*Evaluation, error) {
	v, err := p.Prepare(ctx, c, req, stage)
	if err != nil || !v.Governed || stage == Mutate {
		return v, err
	}
	return p.Judge(ctx, v, state)
}

// Prepare is the first step of a decision: it reads what the decision
// depends on from c once (the runtime, or the stored job's snapshot; the
// namespace), says whether the policies govern the request at all, renders
// the job, applies mpiguard's mutations (stages Mutate and Admit) and builds
// the job's policy input. The evaluation it returns has no Decision yet: Judge
// gives it one, against any quota state, as often as needed. In stage
// Mutate the evaluation is complete (Mutation and Patch).
func (p *Pipeline) Prepare(ctx context.Context, c Cluster, req *Request, stage Stage) (*Evaluation, error) {
	rt, err := p.governedRuntime(ctx, c, req)
	if err != nil || rt == nil {
		return &Evaluation{TrainJob: req.TrainJob}, err
	}
	job := req.TrainJob
	ns, err := c.Namespace(ctx, job.Namespace)
	if err != nil {
		return nil, err
	}
	if Exempt(ns.Namespace) {
		return &Evaluation{TrainJob: req.TrainJob}, nil
	}
	if !req.Audit {
		p.admitted.Store(time.Now().UnixNano())
	}
	if stage == Admit {
		job = job.DeepCopy() // the mutation is applied to it
	}
	in := render.Input{TrainJob: job, Runtime: rt, LimitRanges: ns.LimitRanges, RuntimeClasses: ns.RuntimeClasses, PriorityClasses: ns.PriorityClasses, ServiceAccounts: ns.ServiceAccounts, OwnManager: engine.AdmissionManager}
	view, err := p.renderer.Render(ctx, in)
	if err != nil {
		return nil, err
	}
	if err := p.existingObjects(ctx, c, req, view, ns.Quotas); err != nil {
		return nil, err
	}
	// The policy input of the job, built once: the mutating and the
	// validating pass and every quota state the job is judged against
	// (Judge) read it; only a mutation that changes the job builds it again.
	src := &input.Source{
		Operation:   req.Operation,
		User:        req.User,
		Groups:      req.Groups,
		DryRun:      req.DryRun,
		TrainJob:    job,
		OldTrainJob: req.OldTrainJob,
		View:        view,
		Namespace:   ns.Namespace,
		Quotas:      ns.Quotas,
		Runtime:     runtimeMeta(rt),
	}
	if src.VolcanoQueues, err = volcanoQueues(ctx, c, view); err != nil {
		return nil, err
	}
	if src.Nodes, err = c.Nodes(ctx); err != nil {
		return nil, err
	}
	src.RuntimeClasses = ns.RuntimeClasses
	doc, err := input.New(src)
	if err != nil {
		return nil, err
	}
	er := &engine.Request{Input: doc}
	v := &Evaluation{Governed: true, TrainJob: job, View: view, request: er, from: req}
	if p.networkPolicies != nil && req.Operation == engine.Create {
		v.NetworkPolicy = networkpolicies.Describe(*p.networkPolicies, ns.Namespace, rt).String()
	}
	if stage == Validate {
		return v, nil
	}
	if v.Mutation, err = p.engine.Mutations(ctx, er); err != nil {
		return nil, &PolicyError{err}
	}
	// An update that leaves out what mpiguard decided gets it back.
	restoreStored(v.Mutation, req.OldTrainJob, req.TrainJob)
	if v.Patch, err = patchOperations(req.raw(), req.TrainJob, v.Mutation); err != nil {
		return nil, err
	}
	if stage == Admit && v.Mutation.Apply(job) {
		// The Trainer merges runtime patches: the policies judge the
		// pods the mutated job creates.
		if view, err = p.renderer.Render(ctx, in); err != nil {
			return nil, fmt.Errorf("after mpiguard's mutations: %w", err)
		}
		if err := p.existingObjects(ctx, c, req, view, ns.Quotas); err != nil {
			return nil, err
		}
		v.View, src.View = view, view
		if er.Input, err = input.New(src); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Judge is the second step of a decision: every policy on a governed
// evaluation of Prepare (or of an earlier Judge), against quota state state —
// nil: the quotas the namespace had when it was prepared, nothing reserved.
// The job's own reservation in state (a resume, a renewal) is left out of
// its decision. Nothing is read or
// rendered again, so a quota round that lost its write to another replica
// judges its requests again on a fresh read for the cost of the policies
// alone. It returns a new evaluation; v is unchanged.
func (p *Pipeline) Judge(ctx context.Context, v *Evaluation, state *input.QuotaState) (*Evaluation, error) {
	if !v.Governed || v.request == nil {
		return nil, errors.New("judge: only a governed evaluation of Prepare can be judged")
	}
	er := *v.request
	if state != nil {
		var err error
		if er.Input, err = er.Input.Against(state.Without(v.TrainJob.Namespace+"/"+v.TrainJob.Name, v.TrainJob.UID)); err != nil {
			return nil, err
		}
	}
	d, err := p.judge(ctx, v.from, &er)
	if err != nil {
		return nil, err
	}
	out := *v
	out.Decision, out.request = d, &er
	return &out, nil
}

// judge is the validating step of Judge: the engine's decision on er, with
// the denials of an update that leaves the job suspended deferred.
func (p *Pipeline) judge(ctx context.Context, req *Request, er *engine.Request) (*engine.Decision, error) {
	deferred := jobstate.StaysSuspended(req.OldTrainJob, er.Input.Source().TrainJob)
	er.RecordLater = req.RecordLater || deferred
	d, err := p.engine.Decide(ctx, er)
	if err != nil {
		return nil, &PolicyError{err}
	}
	if deferred {
		deferDenials(d)
		if !req.RecordLater {
			p.engine.Record(er, d)
		}
	}
	return d, nil
}

// Record writes the final decision of an evaluation whose request asked to
// record later to the decision log and metrics.
func (p *Pipeline) Record(v *Evaluation) {
	if v.Governed && v.Decision != nil {
		p.engine.Record(v.request, v.Decision)
	}
}

// governedRuntime returns the runtime of a governed request, nil when the
// request is not governed.
func (p *Pipeline) governedRuntime(ctx context.Context, c Cluster, req *Request) (client.Object, error) {
	if req == nil || (req.Operation != engine.Create && req.Operation != engine.Update) {
		return nil, nil // deletes and connects start nothing
	}
	if err := validateRequest(req); err != nil {
		return nil, err
	}
	if req.OldTrainJob != nil && !req.Audit && (!jobstate.SpecChanged(req.OldTrainJob, req.TrainJob) || jobstate.OnlySuspends(req.OldTrainJob, req.TrainJob)) {
		return nil, nil
	}
	rt, err := req.runtimeOf(ctx, c)
	if err != nil || !engine.Governs(rt) {
		return nil, err
	}
	return rt, nil
}

// runtimeOf is what the Trainer builds the job's pods from: for a stored job
// (an update, a resume, audit), its runtime snapshot when it has one, else
// its runtime. A create has no snapshot yet. Prepare reads it once per
// request; every later judgement of the request reuses what was prepared.
func (req *Request) runtimeOf(ctx context.Context, c Cluster) (client.Object, error) {
	if req.Operation == engine.Update {
		snap, err := c.Snapshot(ctx, req.TrainJob)
		if err != nil || snap != nil {
			return snap, err
		}
	}
	return c.Runtime(ctx, req.TrainJob)
}

func validateRequest(req *Request) error {
	switch {
	case req.TrainJob == nil:
		return errors.New("admission request has no TrainJob")
	case req.Operation == engine.Update && req.OldTrainJob == nil:
		return fmt.Errorf("UPDATE of TrainJob %s/%s without the stored object", req.TrainJob.Namespace, req.TrainJob.Name)
	}
	return nil
}

// raw is the object the patch is computed against.
func (req *Request) raw() []byte {
	if req.Raw != nil {
		return req.Raw
	}
	b, err := json.Marshal(req.TrainJob)
	if err != nil {
		return nil // patchOperations reports an unreadable object
	}
	return b
}

func runtimeMeta(rt client.Object) input.RuntimeMeta {
	return input.RuntimeMeta{
		Kind:        rt.GetObjectKind().GroupVersionKind().Kind,
		Name:        rt.GetName(),
		Labels:      rt.GetLabels(),
		Annotations: rt.GetAnnotations(),
	}
}

// PolicyError is a request the policies could not judge: a policy that
// failed or ran past its deadline. The request is refused; the fault is the
// policies', not the user's (the webhooks answer 500, not 403).
type PolicyError struct{ Err error }

func (e *PolicyError) Error() string { return e.Err.Error() }
func (e *PolicyError) Unwrap() error { return e.Err }
