package networkpolicies

import (
	"fmt"
	"strconv"
	"strings"
)

// PortRange is one TCP port (End == 0) or an inclusive range Start..End, which a
// NetworkPolicy port expresses as port + endPort.
type PortRange struct {
	Start int32
	End   int32
}

func (r PortRange) String() string {
	if r.End == 0 || r.End == r.Start {
		return strconv.Itoa(int(r.Start))
	}
	return fmt.Sprintf("%d-%d", r.Start, r.End)
}

// ParsePort reads a single port number 1..65535.
func ParsePort(s string) (int32, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%q is not a port; give a number from 1 to 65535", s)
	}
	return int32(n), nil
}

// ParsePortRange reads "N" or "N-M" with 1 <= N <= M <= 65535. A range whose ends
// are equal is stored as a single port so the policy carries no endPort.
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, isRange := strings.Cut(strings.TrimSpace(s), "-")
	start, err := ParsePort(lo)
	if err != nil {
		return PortRange{}, fmt.Errorf("port range %q: %w", s, err)
	}
	if !isRange {
		return PortRange{Start: start}, nil
	}
	end, err := ParsePort(hi)
	if err != nil {
		return PortRange{}, fmt.Errorf("port range %q: %w", s, err)
	}
	if end < start {
		return PortRange{}, fmt.Errorf("port range %q ends (%d) before it starts (%d); write it low-high, e.g. %d-%d",
			s, end, start, end, start)
	}
	if end == start {
		return PortRange{Start: start}, nil
	}
	return PortRange{Start: start, End: end}, nil
}
