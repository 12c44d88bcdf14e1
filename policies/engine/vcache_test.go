package engine

import (
	"context"
	"reflect"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// The flat virtual cache must give the same results as OPA's own: rules and
// functions evaluated once per evaluation, `with` evaluating in a fresh frame
// whose values do not leak out of it, undefined values cached as such, and
// nothing carried from one evaluation to the next.
func TestVirtualCacheMatchesOPA(t *testing.T) {
	const module = `package t

a := input.x
b := a + 1
f(n) := n * input.x
undef := input.missing
s contains v if some v in [a, b, f(3)]
`
	query := `r1 := data.t.b
r2 := data.t.b with input.x as 10
r3 := data.t.b
r4 := data.t.f(2) with input.x as 5
r5 := data.t.f(2)
r6 := [v | some v in data.t.s] with input.x as 7
r7 := [v | some v in data.t.s]
r8 := [u | u := data.t.undef]
r9 := [u | u := data.t.undef] with input.missing as 1
r10 := [u | u := data.t.undef]`
	ctx := context.Background()
	pq, err := rego.New(rego.Query(query), rego.Module("t.rego", module)).PrepareForEval(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []int{1, 2, 3} {
		in := ast.MustInterfaceToValue(map[string]any{"x": x})
		want, err := pq.Eval(ctx, rego.EvalParsedInput(in))
		if err != nil {
			t.Fatal(err)
		}
		vc := newVirtualCache()
		got, err := pq.Eval(ctx, rego.EvalParsedInput(in), rego.EvalVirtualCache(vc))
		vc.release()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[0].Bindings, want[0].Bindings) {
			t.Errorf("x=%d: flat cache gives %v, OPA's cache %v", x, got[0].Bindings, want[0].Bindings)
		}
	}
}

func TestVirtualCachePushPop(t *testing.T) {
	vc := newVirtualCache()
	defer vc.release()
	a, b := ast.MustParseRef("data.p.a"), ast.MustParseRef("data.p.b")
	one, two := ast.IntNumberTerm(1), ast.IntNumberTerm(2)
	vc.Put(a, one)
	vc.Put(b, nil)
	if v, undef := vc.Get(a); v != one || undef {
		t.Fatalf("Get(a) = %v, %v", v, undef)
	}
	if v, undef := vc.Get(b); v != nil || !undef {
		t.Fatalf("Get(b) = %v, %v; want undefined", v, undef)
	}
	vc.Push()
	if v, undef := vc.Get(a); v != nil || undef {
		t.Fatalf("pushed frame sees a = %v, %v", v, undef)
	}
	vc.Put(a, two)
	if v, _ := vc.Get(a); v != two {
		t.Fatalf("pushed frame: a = %v", v)
	}
	if keys := vc.Keys(); len(keys) != 1 || !keys[0].Equal(a) {
		t.Fatalf("Keys() = %v", keys)
	}
	vc.Pop()
	if v, _ := vc.Get(a); v != one {
		t.Fatalf("after Pop a = %v, want 1", v)
	}
	// Callers reuse their reference slices: the cache must not keep them.
	ref := ast.MustParseRef("data.p.c")
	vc.Put(ref, one)
	ref[2] = ast.StringTerm("d")
	if v, _ := vc.Get(ast.MustParseRef("data.p.c")); v != one {
		t.Fatalf("Get(c) after the caller reused its slice = %v", v)
	}
}

// Static values are the base of the bottom frame only, and undefined ones read as undefined.
func TestVirtualCacheBase(t *testing.T) {
	a, u, other := ast.MustParseRef("data.p.a"), ast.MustParseRef("data.p.u"), ast.MustParseRef("data.p.other")
	one := ast.IntNumberTerm(1)
	base := &staticValues{refs: []ast.Ref{a, u}, values: []*ast.Term{one, nil}, index: map[int][]int{a.Hash(): {0}, u.Hash(): {1}}}
	vc := newVirtualCache()
	defer vc.release()
	base.prime(vc)
	if v, undef := vc.Get(a); v != one || undef {
		t.Fatalf("Get(a) = %v, %v", v, undef)
	}
	if v, undef := vc.Get(u); v != nil || !undef {
		t.Fatalf("Get(u) = %v, %v; want undefined", v, undef)
	}
	if v, undef := vc.Get(other); v != nil || undef {
		t.Fatalf("Get(other) = %v, %v; want not cached", v, undef)
	}
	if keys := vc.Keys(); len(keys) != 1 || !keys[0].Equal(a) {
		t.Fatalf("Keys() = %v", keys)
	}
	vc.Push()
	if v, undef := vc.Get(a); v != nil || undef {
		t.Fatalf("a with-frame sees the base: %v, %v", v, undef)
	}
	vc.Pop()
	if v, _ := vc.Get(a); v != one {
		t.Fatalf("after Pop a = %v", v)
	}
}
