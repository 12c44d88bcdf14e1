package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
)

// CompileError is a policy set that does not parse or compile. Each line of
// Error() reads "file:row: message", ready for a ConfigMap status annotation.
type CompileError struct {
	Errors ast.Errors
}

func (e *CompileError) Error() string {
	lines := make([]string, 0, len(e.Errors))
	for _, err := range e.Errors {
		if err.Location != nil {
			lines = append(lines, fmt.Sprintf("%s:%d: %s", err.Location.File, err.Location.Row, err.Message))
		} else {
			lines = append(lines, err.Message)
		}
	}
	return "policy compile error: " + strings.Join(lines, "; ")
}

// asErrors extracts OPA's located errors from a parse or compile error.
func asErrors(err error) ast.Errors {
	var errs ast.Errors
	if errors.As(err, &errs) {
		return errs
	}
	var one *ast.Error
	if errors.As(err, &one) {
		return ast.Errors{one}
	}
	return ast.Errors{ast.NewError(ast.CompileErr, nil, "%s", err.Error())}
}

// DeadlineError is an evaluation that ran past the engine's evaluation
// deadline (Options.EvalTimeout) and was stopped: the request could not be
// decided and must be rejected, like any evaluation error.
type DeadlineError struct {
	PolicySet string
	// Policy is the policy OPA was evaluating when the deadline passed; empty
	// when the engine cannot tell (e.g. a rule that depends only on the
	// parameters and the namespace, which the engine evaluates first).
	Policy   string
	Deadline time.Duration
}

func (e *DeadlineError) Error() string {
	if e.Policy != "" {
		return fmt.Sprintf("policy %s (policy set %s) exceeded its evaluation deadline of %s and was stopped", e.Policy, e.PolicySet, e.Deadline)
	}
	return fmt.Sprintf("policy set %s exceeded its evaluation deadline of %s and was stopped", e.PolicySet, e.Deadline)
}
