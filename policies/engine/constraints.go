package engine

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mpiguard/mpiguard/runtimes/constraints"
)

var kConstraints = ast.StringTerm("constraints")

// unconstrained is input.runtime.constraints of a runtime without any
// constraint annotation, the common case: shared, so it costs nothing per request.
var unconstrained = ast.ObjectTerm(item(ast.StringTerm("errors"), ast.ArrayTerm()))

// constraintsTerm is input.runtime.constraints: the limits an admin states on
// the runtime with annotations (runtimes/constraints), exactly as
// constraints.PolicyInput shapes them, malformed annotations listed in
// "errors" so the runtime-constraints policy denies instead of silently
// ignoring them. The map holds only strings, int64s, slices and maps, which
// ast.InterfaceToValue converts directly (no JSON round trip).
func constraintsTerm(annotations map[string]string) *ast.Term {
	if !hasConstraint(annotations) {
		return unconstrained
	}
	v, err := ast.InterfaceToValue(constraints.PolicyInput(annotations))
	if err != nil {
		// Cannot happen for PolicyInput's types; if it ever does, the policy
		// denies with the reason rather than letting the job through unchecked.
		return ast.ObjectTerm(item(ast.StringTerm("errors"), ast.ArrayTerm(ast.StringTerm("metadata.annotations: cannot read the constraint annotations: "+err.Error()))))
	}
	return ast.NewTerm(v)
}

func hasConstraint(annotations map[string]string) bool {
	for _, k := range constraints.Keys {
		if _, ok := annotations[k]; ok {
			return true
		}
	}
	return false
}
