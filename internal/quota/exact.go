package quota

import (
	"math/big"

	"gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Milli is q in milli units, rounded away from zero as
// resource.Quantity.MilliValue rounds (1u is 1m, -1u is -1m), but exact at any
// size: MilliValue is an int64 and wraps around past 9.2e15 units (about 8Pi
// of memory), and a product of pods and a per-pod amount gets there sooner.
func Milli(q resource.Quantity) *big.Int {
	if m := q.MilliValue(); q.CmpInt64(maxMilliSafe) <= 0 && q.CmpInt64(-maxMilliSafe) >= 0 {
		return big.NewInt(m)
	}
	d := new(inf.Dec).Mul(q.AsDec(), inf.NewDec(1000, 0))
	return new(inf.Dec).Round(d, 0, inf.RoundUp).UnscaledBig()
}

// maxMilliSafe bounds the quantities whose MilliValue cannot overflow.
const maxMilliSafe = (1<<63 - 1) / 1000

// Times is q × n, exact (resource.Quantity switches to arbitrary precision when
// an int64 would overflow).
func Times(q resource.Quantity, n int64) resource.Quantity {
	out := q.DeepCopy()
	out.Mul(n)
	return out
}

// MilliInt64 is q in milli units when an int64 holds that exactly: false past
// the int64 range (where MilliValue wraps around) and for amounts finer than
// a milli unit (which MilliValue rounds up). Caches keyed by milli amounts
// must only key such quantities.
func MilliInt64(q resource.Quantity) (int64, bool) {
	if q.CmpInt64(maxMilliSafe) > 0 || q.CmpInt64(-maxMilliSafe) < 0 {
		return 0, false
	}
	m := q.MilliValue()
	return m, q.Cmp(*resource.NewMilliQuantity(m, q.Format)) == 0
}
