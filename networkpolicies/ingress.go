package networkpolicies

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// IngressSource is one source besides the job's own pods that may connect to
// the job's pods: Prometheus scraping them, an ingress controller in front of
// TensorBoard. Every template opens it; none opens anything else inward.
type IngressSource struct {
	// Namespace the source pods run in.
	Namespace string
	// LabelKey and LabelValue narrow the source to the pods so labelled; an
	// empty LabelKey means every pod of Namespace.
	LabelKey, LabelValue string
	// Ports is zero when the source may reach every port; otherwise a TCP port
	// or range.
	Ports PortRange
}

// String renders the source in the syntax ParseIngress reads.
func (s IngressSource) String() string {
	out := s.Namespace
	if s.LabelKey != "" {
		out += "/" + s.LabelKey + "=" + s.LabelValue
	}
	if s.Ports.Start != 0 {
		out += ":" + s.Ports.String()
	}
	return out
}

// ParseIngress reads a comma-separated list of extra ingress sources, each
// NAMESPACE[/key=value][:port[-endPort]], e.g.
// "monitoring/app.kubernetes.io/name=prometheus:9090, ingress-nginx:6006".
// A port means TCP; no port means every port. The namespace ends at the first
// "/", the port starts at the last ":" (neither a label key nor a value may
// hold one). Every bad entry is reported, none is dropped silently.
func ParseIngress(s string) ([]IngressSource, error) {
	return parseList(s, "extra ingress", parseIngressEntry)
}

func parseIngressEntry(entry string) (IngressSource, error) {
	var src IngressSource
	rest := entry
	if i := strings.LastIndex(rest, ":"); i >= 0 {
		r, err := ParsePortRange(rest[i+1:])
		if err != nil {
			return src, fmt.Errorf("%q: %w", entry, err)
		}
		src.Ports, rest = r, rest[:i]
	}
	ns, label, hasLabel := strings.Cut(rest, "/")
	src.Namespace = ns
	var problems []string
	for _, msg := range validation.IsDNS1123Label(ns) {
		problems = append(problems, fmt.Sprintf("namespace %q: %s", ns, msg))
	}
	if hasLabel {
		k, v, ok := strings.Cut(label, "=")
		if !ok || k == "" {
			problems = append(problems, fmt.Sprintf("%q is not key=value", label))
		} else {
			for _, msg := range validation.IsQualifiedName(k) {
				problems = append(problems, fmt.Sprintf("label key %q: %s", k, msg))
			}
			for _, msg := range validation.IsValidLabelValue(v) {
				problems = append(problems, fmt.Sprintf("label %s value %q: %s", k, v, msg))
			}
			src.LabelKey, src.LabelValue = k, v
		}
	}
	if len(problems) > 0 {
		return IngressSource{}, fmt.Errorf("%q is not NAMESPACE[/key=value][:port[-endPort]], e.g. monitoring/app.kubernetes.io/name=prometheus:9090: %s",
			entry, strings.Join(problems, ", "))
	}
	return src, nil
}

// mergeUnique concatenates lists in order, dropping repeats (equal String()),
// so the same entry named by the flag and by an annotation yields one rule and
// the generated policy does not change when an unrelated source re-lists it.
func mergeUnique[T fmt.Stringer](lists ...[]T) []T {
	seen := map[string]bool{}
	var out []T
	for _, list := range lists {
		for _, x := range list {
			if key := x.String(); !seen[key] {
				seen[key] = true
				out = append(out, x)
			}
		}
	}
	return out
}
