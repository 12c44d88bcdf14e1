package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	opametrics "github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mpiguard/mpiguard/internal/input"
)

// RenderPolicy is the policy (policies/rendered-pods) that denies jobs whose
// rendered pods the apiserver would reject (input.job.problems): such a job
// would be admitted and then hang.
const RenderPolicy = "rendered-pods"

// Options configure an Engine.
type Options struct {
	// DecisionLog receives one JSON line per governed decision; nil disables it.
	DecisionLog io.Writer
	// DecisionLogVerbosity says which decisions DecisionLog records;
	// LogDecisions when empty.
	DecisionLogVerbosity Verbosity
	// Registerer registers the engine's metrics (e.g. controller-runtime's
	// metrics.Registry); nil keeps them unregistered.
	Registerer prometheus.Registerer
	// Now is the clock of the decision log; time.Now when nil.
	Now func() time.Time
	// EvalTimeout bounds each evaluation (Decide, Mutations): a policy still
	// running past it is stopped and the call fails with a *DeadlineError.
	// DefaultEvalTimeout when zero.
	EvalTimeout time.Duration
}

// Engine evaluates the policies of a compiled policy set. It is safe for
// concurrent use; Load swaps the set atomically while decisions continue.
type Engine struct {
	current atomic.Pointer[compiledSet]
	log     *decisionLog
	metrics *metrics
	now     func() time.Time
	// evalTimeout is Options.EvalTimeout, defaulted.
	evalTimeout time.Duration

	loadMu  sync.Mutex
	lastErr error
}

// New compiles set and returns an engine serving it.
func New(ctx context.Context, set PolicySet, opts Options) (*Engine, error) {
	e := &Engine{log: newDecisionLog(opts.DecisionLog, opts.DecisionLogVerbosity), metrics: newMetrics(), now: opts.Now, evalTimeout: opts.EvalTimeout}
	if e.now == nil {
		e.now = time.Now
	}
	if e.evalTimeout <= 0 {
		e.evalTimeout = DefaultEvalTimeout
	}
	if opts.Registerer != nil {
		if err := e.metrics.register(opts.Registerer); err != nil {
			return nil, fmt.Errorf("registering policy metrics: %w", err)
		}
	}
	if err := e.Load(ctx, set); err != nil {
		return nil, err
	}
	return e, nil
}

// NewDefault returns an engine serving the embedded default policies.
func NewDefault(ctx context.Context, opts Options) (*Engine, error) {
	set, err := DefaultPolicySet()
	if err != nil {
		return nil, err
	}
	return New(ctx, set, opts)
}

// Load compiles set and, when it compiles, makes it the set serving decisions.
// When it does not, the error (a *CompileError names file and row) is returned
// and remembered (LastError), and the last good set keeps serving.
func (e *Engine) Load(ctx context.Context, set PolicySet) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	c, err := compile(ctx, set)
	if err != nil {
		e.lastErr = err
		e.metrics.reloads.WithLabelValues("failure").Inc()
		return err
	}
	e.lastErr = nil
	e.current.Store(c)
	e.metrics.reloads.WithLabelValues("success").Inc()
	e.metrics.serving(c.version)
	return nil
}

// Version is the version of the policy set serving decisions.
func (e *Engine) Version() string { return e.current.Load().version }

// Policies lists the names of the serving set's policies.
func (e *Engine) Policies() []string { return append([]string(nil), e.current.Load().policies...) }

// LastError is the error of the last Load, nil when it succeeded.
func (e *Engine) LastError() error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	return e.lastErr
}

// Decide evaluates every policy on req. Non-MPI TrainJobs are not governed and
// are allowed at once. An error means the request could not be evaluated: the
// caller must reject it, never allow it.
func (e *Engine) Decide(ctx context.Context, req *Request) (*Decision, error) {
	start := time.Now()
	set := e.current.Load()
	if req == nil || req.Input == nil {
		e.metrics.decisions.WithLabelValues(policyAll, outcomeError).Inc()
		return nil, errors.New("policy engine: request has no input document (internal/input)")
	}
	if !req.Input.Source().View.MPI {
		e.metrics.decisions.WithLabelValues(policyAll, outcomeUngoverned).Inc()
		return &Decision{Allowed: true, PolicySetVersion: set.version, Latency: time.Since(start)}, nil
	}

	d, err := e.decide(ctx, set, req)
	if err != nil {
		e.metrics.decisions.WithLabelValues(policyAll, outcomeError).Inc()
		return nil, err
	}
	d.Latency = time.Since(start)
	if !req.MutationOnly && !req.RecordLater {
		e.record(set, req, d)
	}
	return d, nil
}

// Mutations evaluates req for the mutating webhook and returns what to apply.
// Violations are left to the validating pass, which sees the mutated object.
func (e *Engine) Mutations(ctx context.Context, req *Request) (*Mutation, error) {
	r := *req
	r.MutationOnly = true
	d, err := e.Decide(ctx, &r)
	if err != nil {
		return nil, err
	}
	return &d.Mutation, nil
}

// Record writes decision d of req to the decision log and metrics: for a
// request decided with RecordLater, once its outcome is final. A quota
// decision is final only when its reservation was written; one that lost the
// write to another replica is decided again and only the last one counts.
func (e *Engine) Record(req *Request, d *Decision) {
	e.record(e.current.Load(), req, d)
}

// decide evaluates the pass's rules: mutate rules for a MutationOnly request,
// the rest otherwise. The validating pass of a job with an entry under
// mpiguard's manager first checks the entry is mpiguard's (internal/input,
// entries.go): one evaluation of every rule computes the mutation to compare
// it with, and the validation rules are evaluated again, with the
// differences in the input, only when it is not. Every evaluation reads the
// same input document, built once by the caller.
func (e *Engine) decide(ctx context.Context, set *compiledSet, req *Request) (*Decision, error) {
	if req.MutationOnly {
		return e.evaluate(ctx, set, req, nil, &set.mutate)
	}
	entries := req.Input.Entries()
	pending := slices.IndexFunc(entries, input.Entry.Pending)
	if pending < 0 {
		return e.evaluate(ctx, set, req, entries, &set.validate)
	}
	d, err := e.evaluate(ctx, set, req, entries, &set.all)
	if err != nil {
		return nil, err
	}
	if !entries[pending].Compare(req.Input.Source().TrainJob, d.Mutation.RuntimePatch) {
		d.Mutation = Mutation{} // the validating pass applies nothing
		return d, nil
	}
	return e.evaluate(ctx, set, req, entries, &set.validate)
}

// evaluate runs prepared query q on req's input document, with the set's
// parameters and entries' findings, and applies enforcement to its results.
func (e *Engine) evaluate(ctx context.Context, set *compiledSet, req *Request, entries []input.Entry, q *preparedQuery) (*Decision, error) {
	in := req.Input.Value(set.paramsValue, entries)
	// OPA stops the evaluation when ctx ends: it checks before every
	// expression and inside the builtins that loop (numbers.range, ...).
	ctx, cancel := context.WithTimeoutCause(ctx, e.evalTimeout, errEvalDeadline)
	defer cancel()
	watch := &policyWatch{VirtualCache: topdown.NewVirtualCache()}
	rs, err := q.pq.Eval(ctx,
		rego.EvalParsedInput(in),
		rego.EvalVirtualCache(watch),
		rego.EvalMetrics(opametrics.NoOp()), // nothing reads OPA's per-evaluation timers
	)
	switch {
	case err != nil && pastDeadline(ctx):
		return nil, &DeadlineError{PolicySet: set.version, Policy: watch.policy(), Deadline: e.evalTimeout}
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("evaluating policy set %s: stopped, the request ended (%v): %w", set.version, context.Cause(ctx), err)
	case err != nil:
		return nil, fmt.Errorf("evaluating policy set %s: %w", set.version, err)
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("evaluating policy set %s: %d results, want 1", set.version, len(rs))
	}
	results := map[string]any{}
	if len(q.bindings) > 0 {
		var ok bool
		if results, ok = rs[0].Bindings[resultsVar].(map[string]any); !ok {
			return nil, fmt.Errorf("evaluating policy set %s: results are %T, want an object", set.version, rs[0].Bindings[resultsVar])
		}
	}
	return e.assemble(set, q.bindings, req, results)
}

// assemble applies enforcement and exemptions to the raw policy results.
func (e *Engine) assemble(set *compiledSet, bindings []queryBinding, req *Request, b map[string]any) (*Decision, error) {
	d := &Decision{Allowed: true, Governed: true, PolicySetVersion: set.version}
	namespace := req.Input.Source().TrainJob.Namespace
	var changes []Change
	for _, qb := range bindings {
		results, ok := b[qb.name].([]any)
		if !ok {
			return nil, fmt.Errorf("policy %s: %s results are %T, want an array", qb.policy, qb.rule, b[qb.name])
		}
		s := set.settings[qb.policy]
		exempt, action := s.exempt(namespace), s.enforcement()
		for _, r := range results {
			if qb.rule == "mutate" {
				c, err := changeOf(r)
				if err != nil {
					return nil, fmt.Errorf("policy %s: malformed mutate result: %w", qb.policy, err)
				}
				c.Policy = qb.policy
				switch {
				case exempt:
				case action == EnforceDryRun:
					d.DryRunMutations = append(d.DryRunMutations, c)
				default:
					changes = append(changes, c)
				}
				continue
			}
			field, msg, err := violationOf(r)
			if err != nil {
				return nil, fmt.Errorf("policy %s: malformed %s result: %w", qb.policy, qb.rule, err)
			}
			if exempt {
				continue
			}
			v := Violation{Policy: qb.policy, Action: action, Field: field, Message: msg}
			if qb.rule == "warn" && action == EnforceDeny {
				v.Action = EnforceWarn // warn rules only warn
			}
			d.Allowed = d.Allowed && v.Action != EnforceDeny
			d.Violations = append(d.Violations, v)
		}
	}
	slices.SortFunc(d.Violations, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
	})
	sortChanges(changes)
	sortChanges(d.DryRunMutations)
	var err error
	if d.Mutation, err = buildMutation(changes); err != nil {
		return nil, err
	}
	return d, nil
}

// changeOf reads a mutate result: {"target", "field", "value"} plus
// "replicatedJob" and "key" for pod template changes.
func changeOf(v any) (Change, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Change{}, fmt.Errorf("expected an object, got %T", v)
	}
	c := Change{Value: m["value"]}
	strs := map[string]*string{"target": &c.Target, "field": &c.Field, "replicatedJob": &c.ReplicatedJob, "key": &c.Key}
	for k, x := range m {
		dst, known := strs[k]
		s, isString := x.(string)
		switch {
		case k == "value":
		case !known:
			return Change{}, fmt.Errorf("unknown key %q", k)
		case !isString:
			return Change{}, fmt.Errorf("%s must be a string, got %T", k, x)
		default:
			*dst = s
		}
	}
	if c.Target == "" || c.Field == "" {
		return Change{}, fmt.Errorf("target and field are required in %v", m)
	}
	return c, nil
}

// violationOf reads a {"field": ..., "msg": ...} result; a bare string is a
// message without a field.
func violationOf(v any) (field, msg string, err error) {
	switch x := v.(type) {
	case string:
		return "", x, nil
	case map[string]any:
		msg, _ = x["msg"].(string)
		field, _ = x["field"].(string)
		if msg == "" {
			return "", "", fmt.Errorf("no msg in %v", x)
		}
		return field, msg, nil
	}
	return "", "", fmt.Errorf("expected {field, msg}, got %T", v)
}

func sortChanges(cs []Change) {
	slices.SortStableFunc(cs, func(a, b Change) int {
		return cmp.Or(cmp.Compare(a.ReplicatedJob, b.ReplicatedJob), cmp.Compare(a.Field, b.Field), cmp.Compare(a.Key, b.Key))
	})
}

// record updates metrics and writes the decision log line.
func (e *Engine) record(set *compiledSet, req *Request, d *Decision) {
	src := req.Input.Source()
	e.metrics.latency.Observe(d.Latency.Seconds())
	outcome := outcomeAllowed
	if !d.Allowed {
		outcome = outcomeDenied
	}
	e.metrics.decisions.WithLabelValues(policyAll, outcome).Inc()
	flagged := map[string]string{}
	for _, v := range d.Violations {
		if v.Action == EnforceDeny || flagged[v.Policy] == "" || flagged[v.Policy] == outcomeDryRun {
			flagged[v.Policy] = string(v.Action)
		}
	}
	for _, p := range set.policies {
		o := flagged[p]
		switch {
		case set.settings[p].exempt(src.TrainJob.Namespace):
			o = outcomeExempt
		case o == "":
			o = outcomePass
		}
		e.metrics.decisions.WithLabelValues(p, o).Inc()
		if o == outcomeDeny {
			e.metrics.denials.WithLabelValues(p, src.TrainJob.Namespace).Inc()
		}
	}
	if e.log == nil || !e.log.verbosity.records(d.Allowed) {
		return
	}
	entry := &DecisionLogEntry{
		Time:             e.now().UTC(),
		User:             src.User,
		Kind:             "TrainJob",
		Namespace:        src.TrainJob.Namespace,
		TrainJob:         src.TrainJob.Name,
		Operation:        src.Operation,
		DryRunRequest:    src.DryRun,
		PolicySetVersion: d.PolicySetVersion,
		Allowed:          d.Allowed,
		Violations:       d.Violations,
		Mutations:        d.Mutation.Changes,
		DryRunMutations:  d.DryRunMutations,
		LatencySeconds:   d.Latency.Seconds(),
	}
	if e.log.verbosity == LogInput {
		entry.Input = inputJSON(req)
	}
	_ = e.log.write(entry)
}

// Parameter is parameter name of policy in the serving set, as the policy
// reads it (input.parameters[policy][name]): the value the parameters give,
// else its schema's default. ok is false when the set has no such policy or
// parameter. Controllers that act on a policy's parameters outside admission
// (the follower's max-duration Warning) read them here, so a reload reaches
// them as it reaches the policies.
func (e *Engine) Parameter(policy, name string) (value any, ok bool) {
	value, ok = e.current.Load().params[policy].(map[string]any)[name]
	return value, ok
}
