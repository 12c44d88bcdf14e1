package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// limitPolicy denies more nodes than its maxNodes parameter allows.
const limitPolicy = `package mpiguard.policies.node_limit

deny contains {"field": "spec.trainer.numNodes", "msg": sprintf("%d nodes is more than %d", [input.job.numNodes, input.parameters["node-limit"].maxNodes])} if {
	input.job.numNodes > input.parameters["node-limit"].maxNodes
}
`

// limitSchema is node-limit's parameter schema, with its defaults.
const limitSchema = `type: object
properties:
  maxNodes: {type: integer, minimum: 1, default: 4}
  mode: {type: string, enum: [equal, at-most], default: equal}
  zones:
    type: object
    default: {eu: [eu-west-1]}
    additionalProperties:
      type: array
      items: {type: string}
`

func limitSet(params map[string]any) PolicySet {
	set := PolicySet{
		Modules: map[string]string{"node-limit/node_limit.rego": limitPolicy},
		Schemas: map[string]string{"node-limit": limitSchema},
	}
	if params != nil {
		set.Parameters.Policies = map[string]PolicySettings{"node-limit": {Parameters: params}}
	}
	return set
}

// Parameters are checked against the policy's schema when the set loads: a
// misspelled or mistyped parameter is an error naming its path, never a
// silent fallback to the default; the schema's defaults fill what is unset.
func TestParameterSchema(t *testing.T) {
	cases := []struct {
		name string
		set  PolicySet
		// want is input.parameters when the set loads; err the load error otherwise.
		want map[string]any
		err  string
	}{{
		name: "defaults applied",
		set:  limitSet(nil),
		want: map[string]any{"node-limit": map[string]any{"maxNodes": int64(4), "mode": "equal", "zones": map[string]any{"eu": []any{"eu-west-1"}}}},
	}, {
		name: "given values kept, the rest defaulted",
		set:  limitSet(map[string]any{"maxNodes": 8, "zones": map[string]any{"us": []any{"us-east-1"}}}),
		want: map[string]any{"node-limit": map[string]any{"maxNodes": int64(8), "mode": "equal", "zones": map[string]any{"us": []any{"us-east-1"}}}},
	}, {
		name: "typo",
		set:  limitSet(map[string]any{"maxNode": 8}),
		err:  "parameters: policies.node-limit.parameters.maxNode: unknown field",
	}, {
		name: "wrong type",
		set:  limitSet(map[string]any{"maxNodes": "eight"}),
		err:  `parameters: policies.node-limit.parameters.maxNodes: Invalid value: "string": maxNodes in body must be of type integer: "string"`,
	}, {
		name: "wrong type in a map",
		set:  limitSet(map[string]any{"zones": map[string]any{"eu": "eu-west-1"}}),
		err:  `parameters: policies.node-limit.parameters.zones.eu: Invalid value: "string": zones.eu in body must be of type array: "string"`,
	}, {
		name: "value outside the enum",
		set:  limitSet(map[string]any{"mode": "atmost"}),
		err:  `parameters: policies.node-limit.parameters.mode: Unsupported value: "atmost": supported values: "equal", "at-most"`,
	}, {
		name: "parameters for a policy without a schema",
		set: PolicySet{
			Modules:    map[string]string{"node-limit/node_limit.rego": limitPolicy},
			Parameters: Parameters{Policies: map[string]PolicySettings{"node-limit": {Parameters: map[string]any{"maxNodes": 8}}}},
		},
		err: "parameters: policies.node-limit.parameters: policy node-limit takes no parameters (it has no node-limit/parameters.schema.yaml)",
	}, {
		name: "a schema for a policy the set does not have",
		set: PolicySet{
			Modules: map[string]string{"node-limit/node_limit.rego": limitPolicy},
			Schemas: map[string]string{"node-limit": limitSchema, "node-limt": limitSchema},
		},
		err: "parameters: node-limt/parameters.schema.yaml: a parameter schema for policy node-limt, which the set does not have",
	}, {
		name: "a schema that is not structural",
		set: PolicySet{
			Modules: map[string]string{"node-limit/node_limit.rego": limitPolicy},
			Schemas: map[string]string{"node-limit": "type: object\nproperties:\n  maxNodes: {default: 4}\n"},
		},
		err: "parameters: node-limit/parameters.schema.yaml: properties[maxNodes].type: Required value: must not be empty for specified object fields",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := compile(t.Context(), tc.set)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("load error:\n got %v\nwant %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.params); diff != "" {
				t.Errorf("input.parameters (-want +got):\n%s", diff)
			}
		})
	}
}

// Defaults reach the policies, and a set whose parameters do not match the
// schema is rejected on reload while the last good set keeps serving.
func TestParameterSchemaOnReload(t *testing.T) {
	e, err := New(context.Background(), limitSet(nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	denied := func() []Violation { return decide(t, e, mpiRequest("a", 5)).Denials() }
	if got := denied(); len(got) != 1 || got[0].Message != "5 nodes is more than 4" {
		t.Fatalf("denials with the default maxNodes 4 = %+v", got)
	}
	if err := e.Load(context.Background(), limitSet(map[string]any{"maxNodes": 8})); err != nil {
		t.Fatal(err)
	}
	good := e.Version()
	if got := denied(); len(got) != 0 {
		t.Fatalf("denials with maxNodes 8 = %+v", got)
	}
	err = e.Load(context.Background(), limitSet(map[string]any{"maxNodes": 2, "maxNode": 2}))
	if err == nil || !strings.Contains(err.Error(), "policies.node-limit.parameters.maxNode: unknown field") {
		t.Fatalf("Load with a typo = %v, want the unknown field named", err)
	}
	if e.Version() != good || e.LastError() == nil {
		t.Errorf("a rejected set replaced the serving one (version %s, want %s; last error %v)", e.Version(), good, e.LastError())
	}
	if got := denied(); len(got) != 0 {
		t.Errorf("the last good set (maxNodes 8) no longer decides: %+v", got)
	}
}

// The follower reads the max-duration policy's warnAtPercent from the
// serving set, its default without parameters, and from the embedded schema
// in a process without an engine.
func TestParameterOfTheServingSet(t *testing.T) {
	if v, ok := DefaultParameter("max-duration", "warnAtPercent"); !ok || fmt.Sprint(v) != "80" {
		t.Errorf("DefaultParameter = %v, %v; want 80, true", v, ok)
	}
	if _, ok := DefaultParameter("max-duration", "noSuchParameter"); ok {
		t.Error("DefaultParameter of an unknown parameter: ok")
	}
	set, err := DefaultPolicySet()
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := e.Parameter("max-duration", "warnAtPercent"); !ok || fmt.Sprint(v) != "80" {
		t.Errorf("Parameter = %v, %v; want 80, true", v, ok)
	}
	set, err = set.Overlay(nil, Parameters{Policies: map[string]PolicySettings{"max-duration": {Parameters: map[string]any{"warnAtPercent": 90}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Load(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	if v, ok := e.Parameter("max-duration", "warnAtPercent"); !ok || fmt.Sprint(v) != "90" {
		t.Errorf("Parameter after a reload = %v, %v; want 90, true", v, ok)
	}
}
