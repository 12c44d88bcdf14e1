package input

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"sigs.k8s.io/randfill"

	"github.com/mpiguard/mpiguard/internal/capacity"
	"github.com/mpiguard/mpiguard/internal/podsecurity"
)

// TestInputValueIsItsJSON checks the document's value, its parts as New
// builds them assembled as Document.Value does, against what it replaces: the
// value ast.InterfaceToValue builds from the input's JSON encoding. The inputs
// are filled at random, every field, some maps and lists nil (null in JSON),
// so a field a type gains and value does not write fails here.
func TestInputValueIsItsJSON(t *testing.T) {
	f := randfill.NewWithSeed(1).NilChance(0.2).NumElements(0, 3).Funcs(
		// Amounts are exact decimals written from math/big: integers of any
		// size, and base units with up to three decimals.
		func(n *json.Number, c randfill.Continue) {
			x := new(big.Int).SetUint64(c.Uint64())
			if c.Bool() {
				x.Mul(x, x)
			}
			if c.Bool() {
				x.Neg(x)
			}
			*n = number(x)
			if c.Bool() {
				*n = units(x)
			}
		},
		// The other packages' parts are converted by ast.InterfaceToValue on
		// both sides; an example of each keeps them in the document.
		func(p *podsecurity.Result, c randfill.Continue) {
			*p = podsecurity.Result{Errors: []string{c.String(5)}, Enforce: podsecurity.Mode{Level: "restricted", Violations: []podsecurity.Violation{{Reason: c.String(5)}}}}
		},
		// As capacity.Of makes it: a gang shape's labels are its shape's.
		func(s *capacity.GangShape, c randfill.Continue) {
			c.FillNoCustom(s)
			s.Shape = nil
			if c.Bool() {
				s.Shape = &capacity.Shape{Labels: s.Labels}
			}
		},
		func(m *map[string]any, c randfill.Continue) {
			*m = map[string]any{"maxWorkers": c.Int63(), "errors": []any{c.String(5)}, "zones": map[string]any{"eu": []any{"eu-west-1"}}}
		},
	)
	for i := range 2000 {
		var in document
		f.Fill(&in)
		if i%2 == 0 { // as the builders make it: launcher and workers point into replicatedJobs
			if n := len(in.Job.ReplicatedJobs); n > 0 {
				in.Job.Launcher, in.Job.Workers = &in.Job.ReplicatedJobs[0], &in.Job.ReplicatedJobs[n-1]
			}
		}
		want, err := ast.InterfaceToValue(&in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := in.value()
		if err != nil {
			t.Fatal(err)
		}
		// Compared as text too: a number equal in value but written otherwise
		// ("4.0" for "4") would read otherwise in a message.
		if got.Compare(want) != 0 || got.String() != want.String() {
			t.Fatalf("input %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// value is in as an OPA object: its parts made values as New makes them,
// assembled by Document.object with in's own trainJob and parameters.
func (in *document) value() (ast.Value, error) {
	d := &Document{doc: *in}
	if err := d.makeValues(); err != nil {
		return nil, err
	}
	extern := externs{}
	return d.object(in.TrainJob.value(), extern.term(in.Parameters)), extern.err
}
