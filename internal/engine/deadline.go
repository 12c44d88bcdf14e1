package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// DefaultEvalTimeout bounds one evaluation (a Decide or Mutations call) when
// Options.EvalTimeout is zero. A decision takes well under a millisecond; the
// webhooks' timeoutSeconds is 5 s (10 s for one), so a looping policy fails
// its request with an error that names it instead of every admission call
// timing out at the apiserver with no reason given. It is wall-clock time, so
// it leaves room for a machine whose CPU is shared by many concurrent
// requests: at 1 s, a unit test of concurrent decisions on a loaded 2-core CI
// machine ran past it.
const DefaultEvalTimeout = 3 * time.Second

// errEvalDeadline is the cause of an evaluation context that reached the
// engine's deadline, to tell it from the caller's own cancellation (the
// apiserver's request timeout, a client gone).
var errEvalDeadline = errors.New("policy evaluation deadline exceeded")

// pastDeadline says whether ctx ended because of the engine's deadline.
func pastDeadline(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errEvalDeadline)
}

// DeadlineError is an evaluation that ran past the engine's evaluation
// deadline (Options.EvalTimeout) and was stopped: the request could not be
// decided and must be rejected, like any evaluation error.
type DeadlineError struct {
	PolicySet string
	// Policy is the policy OPA was evaluating when the deadline passed; empty
	// when the engine cannot tell (no policy rule had started).
	Policy   string
	Deadline time.Duration
}

func (e *DeadlineError) Error() string {
	if e.Policy != "" {
		return fmt.Sprintf("policy %s (policy set %s) exceeded its evaluation deadline of %s and was stopped", e.Policy, e.PolicySet, e.Deadline)
	}
	return fmt.Sprintf("policy set %s exceeded its evaluation deadline of %s and was stopped", e.PolicySet, e.Deadline)
}

// policyRoot is the reference prefix of every policy package.
var policyRoot = ast.MustParseRef("data.mpiguard.policies")

// policyWatch is OPA's own virtual cache of one evaluation, remembering the
// last policy package of which OPA started to evaluate a rule: OPA looks every
// rule up in the virtual cache before evaluating it, and the decision query
// evaluates the policies' result rules one after the other, so when a
// deadline stops the evaluation, that is the policy that was running (the
// policy that called a lib helper that loops, too). Cancellation errors carry
// no location; this costs one prefix comparison per cache miss.
type policyWatch struct {
	topdown.VirtualCache
	// segment is the package segment under policyRoot (aggregate_quota), nil
	// until a policy rule is looked up.
	segment ast.Value
}

// Get is the cache's Get, noting the policy of a rule OPA is about to evaluate.
func (w *policyWatch) Get(ref ast.Ref) (*ast.Term, bool) {
	v, undefined := w.VirtualCache.Get(ref)
	if v == nil && !undefined && len(ref) > len(policyRoot) && ref.HasPrefix(policyRoot) {
		w.segment = ref[len(policyRoot)].Value
	}
	return v, undefined
}

// policy is the name of the last policy entered, "" when none was.
func (w *policyWatch) policy() string {
	s, ok := w.segment.(ast.String)
	if !ok {
		return ""
	}
	name, _ := policyName(PolicyPackagePrefix + string(s))
	return name
}
