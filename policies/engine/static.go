package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// Many rules of a policy depend on nothing but its parameters and the
// namespace: data-residency's zone and allowed values, max-duration's limit,
// each policy's params (its defaults merged with input.parameters). OPA would
// evaluate them again in every decision, and they were a large share of its
// work. The engine finds them when it compiles the set (a conservative
// analysis of what every rule reads) and evaluates them once per namespace
// content; each decision starts with their values already in its virtual
// cache, so OPA uses them as if it had just computed them.
//
// Results cannot go stale: parameters are fixed per compiled set (a reload
// builds a new set with an empty cache), and the cache key is the whole
// input.namespace value, compared for equality, not a version.

// staticInputs are the input documents static rules may read.
var staticInputs = []string{"parameters", "namespace"}

// maxStaticNamespaces bounds the per-set cache of static rule values; past it
// the oldest namespace content is evicted.
const maxStaticNamespaces = 1024

// staticRules are a compiled set's static rules and their values per namespace content.
type staticRules struct {
	// refs are the complete rules (single value, no arguments, ground
	// reference) whose value depends only on staticInputs.
	refs []ast.Ref
	pq   rego.PreparedEvalQuery
	// params is input.parameters of the set.
	params *ast.Term

	mu    sync.RWMutex
	byKey map[int][]*staticValues
	fifo  []*staticValues
}

// staticValues are the values of the static rules for one namespace content.
type staticValues struct {
	namespace ast.Value
	hash      int
	refs      []ast.Ref
	values    []*ast.Term // nil: the rule is undefined for this namespace
	// index maps a reference hash to the positions of refs with that hash.
	index map[int][]int
}

// findStaticRules lists the complete rules of c whose value depends only on
// staticInputs. The analysis is conservative: a rule is static when each of
// its definitions (else branches and default included) reads input only
// below input.parameters or input.namespace, refers only to rules and
// functions that are static themselves, uses no `with`, and calls no
// non-deterministic or side-effecting builtin (print, trace, http.send,
// time.now_ns, ...). A data reference that names no rule (a base document)
// makes a rule non-static.
func findStaticRules(c *ast.Compiler) []ast.Ref {
	a := &staticAnalysis{c: c, memo: map[*ast.Rule]bool{}}
	var refs []ast.Ref
	seen := map[string]bool{}
	for _, m := range c.Modules {
		for _, r := range m.Rules {
			if len(r.Head.Args) > 0 || r.Head.RuleKind() != ast.SingleValue {
				continue
			}
			ref := r.Ref()
			if !ref.IsGround() || seen[ref.String()] {
				continue
			}
			seen[ref.String()] = true
			// Every definition of the rule, and nothing else, must live at ref.
			rules := c.GetRulesExact(ref)
			if len(rules) == 0 || len(c.GetRulesDynamicWithOpts(ref, ast.RulesOptions{IncludeHiddenModules: true})) != len(rules) {
				continue
			}
			static := true
			for _, def := range rules {
				if len(def.Head.Args) > 0 || def.Head.RuleKind() != ast.SingleValue || !a.static(def) {
					static = false
					break
				}
			}
			if static {
				refs = append(refs, ref)
			}
		}
	}
	return refs
}

type staticAnalysis struct {
	c    *ast.Compiler
	memo map[*ast.Rule]bool
}

// static says whether rule (with its else chain) reads only staticInputs and static rules.
func (a *staticAnalysis) static(rule *ast.Rule) bool {
	if v, ok := a.memo[rule]; ok {
		return v
	}
	a.memo[rule] = false // Rego forbids recursion; a cycle is never static
	ok := true
	vis := ast.NewGenericVisitor(func(x any) bool {
		if !ok {
			return true
		}
		switch x := x.(type) {
		case *ast.Expr:
			if len(x.With) > 0 {
				ok = false
			} else if x.IsCall() {
				ok = a.staticCall(x.Operator())
			}
		case ast.Var:
			if x.Equal(ast.InputRootDocument.Value) {
				ok = false // the whole input
			}
		case ast.Ref:
			ok = a.staticRef(x)
			if ok && x[0].Equal(ast.InputRootDocument) {
				return true // its segments are strings, nothing more to visit
			}
		}
		return !ok
	})
	for r := rule; r != nil && ok; r = r.Else {
		vis.Walk(r.Head)
		vis.Walk(r.Body)
	}
	a.memo[rule] = ok
	return ok
}

// staticCall says whether calling operator keeps a rule static: a
// deterministic builtin without side effects, or a static function.
func (a *staticAnalysis) staticCall(operator ast.Ref) bool {
	if b := ast.BuiltinMap[operator.String()]; b != nil {
		switch b.Name {
		case ast.Print.Name, ast.InternalPrint.Name, ast.Trace.Name:
			return false
		}
		return !b.Nondeterministic
	}
	return operator[0].Equal(ast.DefaultRootDocument) && a.staticRef(operator)
}

// staticRef says whether reading ref keeps a rule static.
func (a *staticAnalysis) staticRef(ref ast.Ref) bool {
	switch {
	case ref[0].Equal(ast.InputRootDocument):
		if len(ref) < 2 {
			return false
		}
		s, ok := ref[1].Value.(ast.String)
		if !ok {
			return false
		}
		for _, in := range staticInputs {
			if string(s) == in {
				return true
			}
		}
		return false
	case ref[0].Equal(ast.DefaultRootDocument):
		rules := a.c.GetRulesDynamicWithOpts(ref, ast.RulesOptions{IncludeHiddenModules: true})
		if len(rules) == 0 {
			return false // a base document, or nothing
		}
		for _, r := range rules {
			if !a.static(r) {
				return false
			}
		}
		return true
	}
	return true // a local variable
}

// newStaticRules prepares the query that evaluates every static rule of c.
func newStaticRules(ctx context.Context, c *ast.Compiler, params *ast.Term) (*staticRules, error) {
	s := &staticRules{refs: findStaticRules(c), params: params, byKey: map[int][]*staticValues{}}
	if len(s.refs) == 0 {
		return s, nil
	}
	var q strings.Builder
	for i, ref := range s.refs {
		// An array, empty when the rule is undefined.
		fmt.Fprintf(&q, "s%d := [x | x := %s]\n", i, ref)
	}
	pq, err := rego.New(rego.Query(q.String()), rego.Compiler(c), rego.StrictBuiltinErrors(true)).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("preparing the static rules: %w", err)
	}
	s.pq = pq
	return s, nil
}

// valuesFor returns the static rules' values for the namespace term ns,
// evaluating them on first sight of that namespace content.
func (s *staticRules) valuesFor(ctx context.Context, ns *ast.Term) *staticValues {
	if len(s.refs) == 0 {
		return nil
	}
	h := ns.Hash()
	s.mu.RLock()
	for _, v := range s.byKey[h] {
		if v.namespace.Compare(ns.Value) == 0 {
			s.mu.RUnlock()
			return v
		}
	}
	s.mu.RUnlock()

	v, ok := s.evaluate(ctx, ns, h)
	if !ok {
		return v // not cached: the request was cancelled
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, old := range s.byKey[h] {
		if old.namespace.Compare(ns.Value) == 0 {
			return old // evaluated concurrently
		}
	}
	if len(s.fifo) >= maxStaticNamespaces {
		evict := s.fifo[0]
		s.fifo = s.fifo[1:]
		list := s.byKey[evict.hash]
		for i, x := range list {
			if x == evict {
				list = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(s.byKey, evict.hash)
		} else {
			s.byKey[evict.hash] = list
		}
	}
	s.byKey[h] = append(s.byKey[h], v)
	s.fifo = append(s.fifo, v)
	return v
}

// evaluate computes the static rules for namespace ns. When that fails (a
// strict builtin error in some rule), nothing is cached for the namespace:
// its decisions evaluate every rule themselves, and fail the same way if they
// need the failing one.
// The values are not cached when ok is false (the request's context ended).
func (s *staticRules) evaluate(ctx context.Context, ns *ast.Term, h int) (v *staticValues, ok bool) {
	v = &staticValues{namespace: ns.Value, hash: h}
	in := ast.NewObject(item(kParameters, s.params), item(kNamespace, ns))
	asTerms := rego.EvalGenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil })
	rs, err := s.pq.Eval(ctx, rego.EvalParsedInput(in), asTerms)
	if err != nil || len(rs) != 1 {
		return v, ctx.Err() == nil
	}
	for i, ref := range s.refs {
		v.add(ref, rs[0].Bindings[fmt.Sprintf("s%d", i)])
	}
	v.index = make(map[int][]int, len(v.refs))
	for i, ref := range v.refs {
		h := ref.Hash()
		v.index[h] = append(v.index[h], i)
	}
	return v, true
}

// add records the value of ref from a "[x | x := ref]" binding.
func (v *staticValues) add(ref ast.Ref, binding any) {
	t, ok := binding.(*ast.Term)
	if !ok {
		return
	}
	arr, ok := t.Value.(*ast.Array)
	if !ok {
		return
	}
	switch arr.Len() {
	case 0:
		v.refs, v.values = append(v.refs, ref), append(v.values, nil)
	case 1:
		v.refs, v.values = append(v.refs, ref), append(v.values, arr.Elem(0))
	}
}

// prime makes the static values the base of a decision's virtual cache:
// read-only, shared by every decision in the namespace, nothing copied.
func (v *staticValues) prime(vc *virtualCache) {
	if v == nil || len(v.refs) == 0 {
		return
	}
	vc.base = v
}

// get is virtualCache.Get for the static values.
func (v *staticValues) get(ref ast.Ref) (*ast.Term, bool) {
	for _, i := range v.index[ref.Hash()] {
		if v.refs[i].Equal(ref) {
			return v.values[i], v.values[i] == nil
		}
	}
	return nil, false
}
