package engine

import (
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
)

// quotaInputField is the input field built from Request.Quotas and
// Request.Reserved (quota.go): a query none of whose rules may read it is
// given an input without them. The mutating pass, whose rules read no
// quota, then skips building the namespace's quotas and every reservation
// in them: a sixth of `mpiguard check`'s CPU (docs/performance.md, "Offline
// check"). An input field added from Quotas or Reserved must be listed here
// too.
var quotaInputField = []string{"quotas"}

// mayReadInput says whether a rule bindings select, or any rule or function
// it depends on (the compiler's dependency graph, which over-approximates
// rules a ref selects through a variable), may read one of input's fields:
// a ref input.<field>, a ref input[<not a string>], or input whole (bound to
// a variable, passed to a function, replaced with `with`).
func mayReadInput(c *ast.Compiler, bindings []queryBinding, fields []string) bool {
	seen := map[util.T]bool{}
	var next []util.T
	for _, b := range bindings {
		for _, r := range c.GetRules(ast.MustParseRef(b.ref)) {
			next = append(next, r)
		}
	}
	for len(next) > 0 {
		x := next[len(next)-1]
		next = next[:len(next)-1]
		if seen[x] {
			continue
		}
		seen[x] = true
		if r, ok := x.(*ast.Rule); !ok || readsInput(r, fields) {
			return true
		}
		for d := range c.Graph.Dependencies(x) {
			next = append(next, d)
		}
	}
	return false
}

// readsInput says whether rule r itself (its else branches included) may
// read one of input's fields.
func readsInput(r *ast.Rule, fields []string) bool {
	found := false
	var vis *ast.GenericVisitor
	vis = ast.NewGenericVisitor(func(x any) bool {
		t, ok := x.(ast.Ref)
		if found || !ok || !t[0].Equal(ast.InputRootDocument) {
			return found
		}
		// The compiler writes input used whole as the ref `input`.
		if len(t) == 1 {
			found = true
			return true
		}
		if field, ok := t[1].Value.(ast.String); !ok || slices.Contains(fields, string(field)) {
			found = true
			return true
		}
		for _, e := range t[1:] { // refs inside input.x[...]
			vis.Walk(e)
		}
		return true
	})
	vis.Walk(r)
	return found
}
