package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// resultRules are the rules a policy may define; the engine reads nothing else.
var resultRules = []string{"deny", "warn", "mutate"}

// decisionQuery collects the results of the rules include selects in one
// evaluation: one expression binding resultsVar to an object with a key per
// (policy, rule) the set defines, named r<i>. Naming every rule explicitly is
// several times cheaper than iterating data.mpiguard.policies[_], and one
// expression is cheaper than one per rule. deny, warn and mutate are sets,
// never undefined (a set without members is empty); a policy that defines one
// as anything else makes the results malformed or undefined, an error.
func decisionQuery(c *ast.Compiler, include func(policy, rule string) bool) (string, []queryBinding) {
	var bindings []queryBinding
	for _, m := range c.Modules {
		pkg := m.Package.Path.String()
		policy, ok := policyName(pkg)
		for _, r := range m.Rules {
			b := queryBinding{ref: pkg + "." + r.Head.Name.String(), policy: policy, rule: r.Head.Name.String()}
			if ok && slices.Contains(resultRules, b.rule) && !slices.Contains(bindings, b) && include(policy, b.rule) {
				bindings = append(bindings, b)
			}
		}
	}
	slices.SortFunc(bindings, func(a, b queryBinding) int { return strings.Compare(a.ref, b.ref) })
	items := make([]string, len(bindings))
	for i := range bindings {
		bindings[i].name = fmt.Sprintf("r%d", i)
		items[i] = fmt.Sprintf("%q: %s", bindings[i].name, bindings[i].ref)
	}
	if len(items) == 0 {
		return "", nil
	}
	return resultsVar + " := {" + strings.Join(items, ", ") + "}", bindings
}

// resultsVar is the variable decisionQuery binds.
const resultsVar = "results"

// queryBinding says which policy and rule a binding of decisionQuery holds.
type queryBinding struct {
	name, ref, policy, rule string
}

// preparedQuery is a compiled decision query and what its bindings hold.
type preparedQuery struct {
	pq       rego.PreparedEvalQuery
	bindings []queryBinding
}

func prepare(ctx context.Context, c *ast.Compiler, include func(policy, rule string) bool) (preparedQuery, error) {
	query, bindings := decisionQuery(c, include)
	if query == "" {
		query = "true" // no rule selected: an empty result
	}
	// Strict builtin errors: a builtin failing at run time (a bad parameter, a
	// type error in a pushed policy) fails the evaluation instead of making a
	// deny rule silently undefined, which would allow the request.
	pq, err := rego.New(rego.Query(query), rego.Compiler(c), rego.StrictBuiltinErrors(true)).PrepareForEval(ctx)
	if err != nil {
		return preparedQuery{}, &CompileError{Errors: asErrors(err)}
	}
	return preparedQuery{pq: pq, bindings: bindings}, nil
}

// compiledSet is a policy set ready to evaluate. It is immutable once built, so
// decisions read it without locks while a reload swaps in the next one.
type compiledSet struct {
	version string
	// validate evaluates deny and warn rules, and the mutate rules of dryrun
	// policies (logged only); mutate evaluates the mutate rules of the others.
	// Each webhook pass evaluates only what it needs. all evaluates both: the
	// validating pass of a job carrying an entry under mpiguard's manager
	// compares it with the mutation (internal/input, entries.go).
	validate, mutate, all preparedQuery
	policies              []string
	settings              map[string]PolicySettings
	// params is input.parameters: each policy's parameters, checked and
	// defaulted against its schema (schema.go); paramsValue is it as an
	// OPA value, made once per load and shared by every evaluation.
	params      map[string]any
	paramsValue *ast.Term
}

// compile parses, compiles and prepares a policy set. Any error is a
// *CompileError naming file and row, or a configuration error.
func compile(ctx context.Context, set PolicySet) (*compiledSet, error) {
	modules := make(map[string]*ast.Module, len(set.Modules))
	var parseErrs ast.Errors
	for name, src := range set.Modules {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			parseErrs = append(parseErrs, asErrors(err)...)
			continue
		}
		modules[name] = m
	}
	if len(parseErrs) > 0 {
		return nil, &CompileError{Errors: sortErrors(parseErrs)}
	}
	// The sandbox (capabilities.go): a call to a builtin it refuses is a
	// compile error at the call, like a call to a function that does not exist.
	c := ast.NewCompiler().WithCapabilities(Capabilities())
	if c.Compile(modules); c.Failed() {
		return nil, &CompileError{Errors: sortErrors(sandboxErrors(c.Errors))}
	}

	known := map[string]bool{}
	for _, m := range c.Modules {
		if name, ok := policyName(m.Package.Path.String()); ok {
			known[name] = true
		}
	}
	if len(known) == 0 {
		return nil, fmt.Errorf("policy set has no policy: packages must be %s<name>", PolicyPackagePrefix)
	}
	if unknown := set.Parameters.unknownPolicies(known); len(unknown) > 0 {
		return nil, fmt.Errorf("parameters configure policies the set does not have: %s", strings.Join(unknown, ", "))
	}
	params, err := checkParameters(set, known)
	if err != nil {
		return nil, err
	}

	paramsValue, err := ast.InterfaceToValue(params)
	if err != nil {
		return nil, fmt.Errorf("parameters as a policy input: %w", err)
	}

	dryrun := func(policy string) bool { return set.Parameters.Policies[policy].enforcement() == EnforceDryRun }
	out := &compiledSet{
		version: set.Version(), policies: slices.Sorted(maps.Keys(known)), settings: set.Parameters.Policies,
		params: params, paramsValue: ast.NewTerm(paramsValue),
	}
	for _, p := range []struct {
		q       *preparedQuery
		include func(policy, rule string) bool
	}{
		{&out.validate, func(policy, rule string) bool { return rule != "mutate" || dryrun(policy) }},
		{&out.mutate, func(policy, rule string) bool { return rule == "mutate" && !dryrun(policy) }},
		{&out.all, func(string, string) bool { return true }},
	} {
		if *p.q, err = prepare(ctx, c, p.include); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sortErrors orders errors by file and row, errors without a location first.
func sortErrors(errs ast.Errors) ast.Errors {
	key := func(e *ast.Error) (string, int) {
		if e.Location == nil {
			return "", -1
		}
		return e.Location.File, e.Location.Row
	}
	slices.SortStableFunc(errs, func(a, b *ast.Error) int {
		fa, ra := key(a)
		fb, rb := key(b)
		return cmp.Or(strings.Compare(fa, fb), cmp.Compare(ra, rb))
	})
	return errs
}

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
