package engine

import (
	"context"
	"fmt"
	"sort"
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
	defined := map[string]map[string]bool{}
	for _, m := range c.Modules {
		pkg := m.Package.Path.String()
		segment, ok := strings.CutPrefix(pkg, PolicyPackagePrefix)
		if _, isPolicy := policyName(pkg); !ok || !isPolicy {
			continue
		}
		if defined[segment] == nil {
			defined[segment] = map[string]bool{}
		}
		for _, r := range m.Rules {
			defined[segment][r.Head.Name.String()] = true
		}
	}
	segments := make([]string, 0, len(defined))
	for s := range defined {
		segments = append(segments, s)
	}
	sort.Strings(segments)
	var items []string
	var bindings []queryBinding
	for _, seg := range segments {
		for _, rule := range resultRules {
			policy, _ := policyName(PolicyPackagePrefix + seg)
			if !defined[seg][rule] || !include(policy, rule) {
				continue
			}
			name := fmt.Sprintf("r%d", len(bindings))
			items = append(items, fmt.Sprintf("%q: %s%s.%s", name, PolicyPackagePrefix, seg, rule))
			bindings = append(bindings, queryBinding{name: name, policy: policy, rule: rule})
		}
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
	name, policy, rule string
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
	// compares it with the mutation (entries.go).
	validate, mutate, all preparedQuery
	policies              []string
	settings              map[string]PolicySettings
	// params is input.parameters, built once per set.
	params *ast.Term
	// static are the rules that depend only on the parameters and the
	// namespace, evaluated once per namespace content.
	static *staticRules
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
	known[RenderPolicy] = true // built in: denies rendered pods the apiserver would reject
	if unknown := set.Parameters.unknownPolicies(known); len(unknown) > 0 {
		return nil, fmt.Errorf("parameters configure policies the set does not have: %s", strings.Join(unknown, ", "))
	}

	dryrun := func(policy string) bool { return set.Parameters.Policies[policy].enforcement() == EnforceDryRun }
	validate, err := prepare(ctx, c, func(policy, rule string) bool { return rule != "mutate" || dryrun(policy) })
	if err != nil {
		return nil, err
	}
	mutate, err := prepare(ctx, c, func(policy, rule string) bool { return rule == "mutate" && !dryrun(policy) })
	if err != nil {
		return nil, err
	}
	all, err := prepare(ctx, c, func(string, string) bool { return true })
	if err != nil {
		return nil, err
	}
	params, err := parametersTerm(set.Parameters)
	if err != nil {
		return nil, err
	}
	static, err := newStaticRules(ctx, c, params)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	return &compiledSet{
		version:  set.Version(),
		validate: validate,
		mutate:   mutate,
		all:      all,
		policies: names,
		settings: set.Parameters.Policies,
		params:   params,
		static:   static,
	}, nil
}

// parametersTerm builds input.parameters: policy name -> its parameters.
func parametersTerm(p Parameters) (*ast.Term, error) {
	obj := map[string]any{}
	for name, s := range p.Policies {
		if s.Parameters != nil {
			obj[name] = s.Parameters
		}
	}
	v, err := ast.InterfaceToValue(obj)
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	return ast.NewTerm(v), nil
}

func sortErrors(errs ast.Errors) ast.Errors {
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i].Location, errs[j].Location
		if a == nil || b == nil {
			return b != nil
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Row < b.Row
	})
	return errs
}
