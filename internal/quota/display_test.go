package quota

import (
	"context"
	"fmt"
	"math/big"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	"gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mpiguard/mpiguard/policies"
)

// Display, which the engine uses for the amounts it supplies, shows amounts as
// the policies' lib.display does, at any size, and as kubectl shows
// canonical binary quantities.
func TestDisplayAgreesWithRegoAndKubectl(t *testing.T) {
	src, err := policies.FS.ReadFile("lib/quantity.rego")
	if err != nil {
		t.Fatal(err)
	}
	pow2 := func(n uint, k int64) *big.Int { return new(big.Int).Lsh(big.NewInt(k), n) }
	milli := func(n *big.Int) *big.Int { return new(big.Int).Mul(n, big.NewInt(1000)) }
	amounts := []*big.Int{
		big.NewInt(0), big.NewInt(-2000), big.NewInt(1), big.NewInt(1500), big.NewInt(4000), big.NewInt(1000000),
		milli(big.NewInt(1000)), milli(big.NewInt(1023)), milli(big.NewInt(1024)), milli(big.NewInt(1000000000)),
		milli(pow2(30, 16)), milli(pow2(20, 7936)), milli(pow2(40, 4*5000)), milli(pow2(50, 16)),
		milli(new(big.Int).Add(pow2(50, 16), pow2(30, 1))), milli(pow2(60, 5000)), milli(pow2(70, 1)),
		milli(new(big.Int).Add(pow2(64, 1), big.NewInt(1))), new(big.Int).Add(milli(pow2(64, 1)), big.NewInt(1)),
	}
	ctx := context.Background()
	for _, res := range []string{"memory", "hugepages-2Mi", "cpu", "nvidia.com/gpu", ""} {
		for _, m := range amounts {
			want := Display(res, m)
			rs, err := rego.New(rego.Query(fmt.Sprintf("x := data.mpiguard.lib.display(%q, %s)", res, m)), rego.Module("quantity.rego", string(src))).Eval(ctx)
			if err != nil {
				t.Fatalf("lib.display(%q, %s): %v", res, m, err)
			}
			if len(rs) != 1 || rs[0].Bindings["x"] != want {
				t.Errorf("lib.display(%q, %s) = %v, Display = %q", res, m, rs, want)
			}
		}
	}
	// kubectl prints whole binary amounts of 1024 bytes or more the same way,
	// up to 1024Ei (past it, with no larger suffix, apimachinery prints 2^70
	// bytes as "1"; Display prints 1024Ei).
	for _, m := range amounts {
		units := new(big.Int).Quo(m, big.NewInt(1000))
		if m.Sign() <= 0 || m.Cmp(milli(units)) != 0 || units.Cmp(big.NewInt(1024)) < 0 || units.Cmp(pow2(70, 1)) >= 0 {
			continue
		}
		q := resource.NewDecimalQuantity(*inf.NewDecBig(units, 0), resource.BinarySI)
		if got := Display("memory", m); got != q.String() {
			t.Errorf("Display(memory, %s) = %q, kubectl prints %q", m, got, q.String())
		}
	}
}
