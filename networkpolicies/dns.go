package networkpolicies

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseDNSPods reads the cluster DNS pods as namespace/key=value[,key=value]:
// "kube-system/k8s-app=kube-dns", or on OpenShift
// "openshift-dns/dns.operator.openshift.io/daemonset-dns=default". The namespace
// ends at the first "/", so label keys may carry a prefix with a "/" of its own.
func ParseDNSPods(s string) (string, map[string]string, error) {
	ns, sel, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || ns == "" || sel == "" {
		return "", nil, fmt.Errorf("%q is not namespace/key=value[,key=value], e.g. kube-system/k8s-app=kube-dns", s)
	}
	labels := map[string]string{}
	for _, kv := range strings.Split(sel, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return "", nil, fmt.Errorf("%q: %q is not key=value", s, kv)
		}
		labels[k] = v
	}
	if err := validateDNS(ns, labels, []int32{DefaultDNSPort}); err != nil {
		return "", nil, fmt.Errorf("%q: %w", s, err)
	}
	return ns, labels, nil
}

// ParsePorts reads a comma-separated list of ports ("53", "5353", "53,5353").
// A port named twice is kept once, in its first place, so the policy does not
// repeat a rule.
func ParsePorts(s string) ([]int32, error) {
	var ports []int32
	for _, raw := range strings.Split(s, ",") {
		p, err := ParsePort(raw)
		if err != nil {
			return nil, fmt.Errorf("ports %q: %w", s, err)
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// validateDNS rejects a DNS target the apiserver would refuse in every policy
// (a namespace that is no valid name, a label that is no valid label) or that
// would allow nothing (no pod labels: an empty selector would instead select
// every pod of the namespace, which is not what anyone means by "DNS").
func validateDNS(namespace string, podLabels map[string]string, ports []int32) error {
	var errs []error
	for _, msg := range validation.IsDNS1123Label(namespace) {
		errs = append(errs, fmt.Errorf("namespace %q: %s", namespace, msg))
	}
	if len(podLabels) == 0 {
		errs = append(errs, errors.New("no pod labels: name the DNS pods' labels, e.g. k8s-app=kube-dns"))
	}
	keys := make([]string, 0, len(podLabels))
	for k := range podLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Errorf("label key %q: %s", k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(podLabels[k]) {
			errs = append(errs, fmt.Errorf("label %s value %q: %s", k, podLabels[k], msg))
		}
	}
	if len(ports) == 0 {
		errs = append(errs, errors.New("no ports: give the port the DNS pods listen on, e.g. 53"))
	}
	for _, p := range ports {
		if p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("port %d is outside 1-65535", p))
		}
	}
	return errors.Join(errs...)
}
