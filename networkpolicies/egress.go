package networkpolicies

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// EgressRule is one extra destination the job's pods may reach besides their own
// job and DNS: object storage, an image or package registry, a license server.
type EgressRule struct {
	// CIDR is the destination block in canonical form (10.0.0.0/8, fd00::/8).
	CIDR string
	// Protocol is empty when the rule covers every protocol and port.
	Protocol corev1.Protocol
	// Ports is zero when the rule covers every port of Protocol.
	Ports PortRange
}

// String renders the rule in the syntax ParseEgress reads, so messages and
// de-duplication use one spelling.
func (e EgressRule) String() string {
	s := e.CIDR
	if e.Ports.Start != 0 {
		s += ":" + e.Ports.String()
	}
	if e.Protocol != "" && (e.Protocol != corev1.ProtocolTCP || e.Ports.Start == 0) {
		s += "/" + string(e.Protocol)
	}
	return s
}

// egressEntry is CIDR[:port[-endPort]][/protocol]. The CIDR is matched up to its
// "/prefix" first so IPv6 colons are not taken for the port separator.
var egressEntry = regexp.MustCompile(`^([0-9A-Fa-f:.]+/[0-9]{1,3})(?::([0-9]+(?:-[0-9]+)?))?(?:/([A-Za-z]+))?$`)

// ParseEgress reads a comma-separated list of extra egress destinations, e.g.
// "10.20.0.0/16:443, 10.30.0.0/16:9000-9100, 192.168.0.10/32:53/UDP, 172.16.0.0/12".
// A port without protocol means TCP; a CIDR alone means every port and protocol.
// Empty input yields no rules. Every bad entry is reported, none is dropped silently.
func ParseEgress(s string) ([]EgressRule, error) {
	return parseList(s, "extra egress", parseEgressEntry)
}

// parseList reads a comma-separated list with parse, one entry at a time:
// blanks are skipped, every bad entry is reported (prefixed with what), and the
// good ones are returned either way.
func parseList[T any](s, what string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	var errs []string
	for _, raw := range strings.Split(s, ",") {
		entry := strings.TrimSpace(raw)
		if entry == "" {
			continue
		}
		x, err := parse(entry)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		out = append(out, x)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s: %s", what, strings.Join(errs, "; "))
	}
	return out, nil
}

func parseEgressEntry(entry string) (EgressRule, error) {
	m := egressEntry.FindStringSubmatch(entry)
	if m == nil {
		return EgressRule{}, fmt.Errorf("%q is not CIDR[:port[-endPort]][/TCP|UDP|SCTP], e.g. 10.20.0.0/16:443", entry)
	}
	prefix, err := netip.ParsePrefix(m[1])
	if err != nil {
		return EgressRule{}, fmt.Errorf("%q: %q is not a CIDR: %v", entry, m[1], err)
	}
	rule := EgressRule{CIDR: prefix.Masked().String()}
	if m[2] != "" {
		if rule.Ports, err = ParsePortRange(m[2]); err != nil {
			return EgressRule{}, fmt.Errorf("%q: %w", entry, err)
		}
		rule.Protocol = corev1.ProtocolTCP
	}
	if m[3] != "" {
		switch p := corev1.Protocol(strings.ToUpper(m[3])); p {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
			rule.Protocol = p
		default:
			return EgressRule{}, fmt.Errorf("%q: protocol %q is not TCP, UDP or SCTP", entry, m[3])
		}
	}
	return rule, nil
}
