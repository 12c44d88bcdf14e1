package engine

import (
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// BenchmarkCalibrationTrivialQuery evaluates the prepared query `x := 1`: the
// floor of any OPA evaluation on this machine at this moment, to read the
// policy benchmarks against when the machine is shared.
func BenchmarkCalibrationTrivialQuery(b *testing.B) {
	pq, err := rego.New(rego.Query("x := 1")).PrepareForEval(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	in := ast.NewObject()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pq.Eval(context.Background(), rego.EvalParsedInput(in)); err != nil {
			b.Fatal(err)
		}
	}
}
