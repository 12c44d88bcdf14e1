package quota

import (
	"math/big"
	"strings"
)

// binarySuffixes are kubectl's suffixes for 1024^i bytes.
var binarySuffixes = [...]string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// Display shows a milli amount of resource res the way the policies'
// lib.display does (and kubectl prints a canonical quantity), exactly at any
// size: 0 for none or less, 1500m for a fraction, bytes with the largest
// binary suffix that divides them (up to Ei: 16Pi, 7936Mi, 1000000000), other
// whole amounts plainly (4, 1000: counts and cores, never 1k).
func Display(res string, m *big.Int) string {
	if m.Sign() <= 0 {
		return "0"
	}
	units, frac := new(big.Int).QuoRem(m, big.NewInt(1000), new(big.Int))
	if frac.Sign() != 0 {
		return m.String() + "m"
	}
	if !countedInBytes(res) {
		return units.String()
	}
	shift := min(units.TrailingZeroBits()/10, uint(len(binarySuffixes)-1))
	return units.Rsh(units, 10*shift).String() + binarySuffixes[shift]
}

// countedInBytes says whether a resource is an amount of bytes (lib.memory_like).
func countedInBytes(res string) bool {
	switch res {
	case "memory", "ephemeral-storage", "storage":
		return true
	}
	return strings.HasPrefix(res, "hugepages-")
}
