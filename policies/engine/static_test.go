package engine

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A rule is static only when nothing it reads, directly or through other
// rules and functions, can differ between two requests in the same namespace.
func TestFindStaticRules(t *testing.T) {
	modules := map[string]string{
		"p.rego": `package mpiguard.policies.p

import data.mpiguard.lib

defaults := {"a": 1}

params := object.union(defaults, object.get(input.parameters, "p", {}))

zone := input.namespace.labels.zone

limit := params.a * 2 if zone == "eu"

else := 0

default fallback := 1

fallback := 2 if input.namespace.name == "x"

helper := lib.h

f(x) := x + params.a

via_func := f(1)

sorted := sort([x | some x in params.list])

job := input.job

uses_job := count(job)

g(x) := x + count(input.job)

via_bad_func := g(1)

mixed := 1 if zone == "eu"

else := 2 if input.job.mpi

now := time.now_ns()

printed := 1 if print("x")

with_mod := z if {
	z := zone with input.namespace as {}
}

base := data.somewhere.else

whole_input := input

partial contains x if some x in params.list

from_partial := count(partial)

deny contains "x" if false
`,
		"lib.rego": `package mpiguard.lib

h := input.parameters.x

j := input.request.operation
`,
	}
	parsed := map[string]*ast.Module{}
	for name, src := range modules {
		parsed[name] = ast.MustParseModuleWithOpts(src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	}
	// With print enabled (the engine's compiler erases print calls).
	c := ast.NewCompiler().WithEnablePrintStatements(true)
	if c.Compile(parsed); c.Failed() {
		t.Fatal(c.Errors)
	}
	var got []string
	for _, ref := range findStaticRules(c) {
		got = append(got, ref.String())
	}
	sort.Strings(got)
	want := []string{
		"data.mpiguard.lib.h",
		"data.mpiguard.policies.p.defaults",
		"data.mpiguard.policies.p.fallback",
		"data.mpiguard.policies.p.from_partial",
		"data.mpiguard.policies.p.helper",
		"data.mpiguard.policies.p.limit",
		"data.mpiguard.policies.p.params",
		"data.mpiguard.policies.p.sorted",
		"data.mpiguard.policies.p.via_func",
		"data.mpiguard.policies.p.zone",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("static rules (-want +got):\n%s", diff)
	}
}

// Decisions with the static rules precomputed are the decisions OPA makes
// evaluating everything itself, for namespaces that exercise every static
// rule of the default set (zones known, unknown, absent; the max-duration
// annotation valid, invalid, absent), evaluated twice so the second comes
// from the cache.
func TestStaticRulesDecideAlike(t *testing.T) {
	ctx := context.Background()
	e, err := NewDefault(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	set := e.current.Load()
	if len(set.static.refs) == 0 {
		t.Fatal("the default set has no static rule")
	}
	plain := *set
	plain.static = &staticRules{}
	namespaces := []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "eu", Labels: map[string]string{"mpiguard.io/data-residency": "eu"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "mars", Labels: map[string]string{"mpiguard.io/data-residency": "mars"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "short", Annotations: map[string]string{"mpiguard.io/max-duration-hours": "1.5"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "long", Annotations: map[string]string{"mpiguard.io/max-duration-hours": "500"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bad", Labels: map[string]string{"mpiguard.io/data-residency": "us"}, Annotations: map[string]string{"mpiguard.io/max-duration-hours": "ten"}}},
	}
	for round := range 2 {
		for _, ns := range namespaces {
			for _, deadline := range []int64{0, 3600, 7200, 1000000} {
				for _, mutate := range []bool{false, true} {
					req := mpiRequest(ns.Name, 2)
					req.Namespace = ns
					req.TrainJob.Spec.ActiveDeadlineSeconds = deadline
					req.MutationOnly = mutate
					name := fmt.Sprintf("round %d %s deadline %d mutate %v", round, ns.Name, deadline, mutate)
					got, err := e.decide(ctx, set, req)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					want, err := e.decide(ctx, &plain, req)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s: precomputed static rules change the decision (-evaluated +precomputed):\n%s", name, diff)
					}
				}
			}
		}
	}
	if n := len(set.static.fifo); n != len(namespaces) {
		t.Errorf("%d namespace contents cached, want %d", n, len(namespaces))
	}
}

// The cache holds at most maxStaticNamespaces namespace contents, evicting
// the oldest, and a namespace whose content changes gets new values.
func TestStaticRulesCacheBoundedAndKeyedOnContent(t *testing.T) {
	ctx := context.Background()
	e, err := NewDefault(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := e.current.Load().static
	limit := func(v *staticValues) *ast.Term {
		for i, ref := range v.refs {
			if ref.String() == "data.mpiguard.policies.max_duration.limit_seconds" {
				return v.values[i]
			}
		}
		t.Fatal("max_duration.limit_seconds is not static")
		return nil
	}
	for i := range maxStaticNamespaces + 10 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Annotations: map[string]string{"mpiguard.io/max-duration-hours": fmt.Sprint(i + 1)}}}
		v := s.valuesFor(ctx, namespaceTerm(ns, ns.Name))
		if got, want := limit(v).String(), fmt.Sprint((i+1)*3600); got != want {
			t.Fatalf("namespace annotated %d hours: limit_seconds %s, want %s", i+1, got, want)
		}
	}
	n := 0
	for _, list := range s.byKey {
		n += len(list)
	}
	if len(s.fifo) != maxStaticNamespaces || n != maxStaticNamespaces {
		t.Errorf("cache holds %d (%d by key) namespace contents, want %d", len(s.fifo), n, maxStaticNamespaces)
	}
}
