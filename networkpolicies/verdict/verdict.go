// Package verdict judges connections against NetworkPolicies the way a
// NetworkPolicy-enforcing CNI must, with cyclonus's policy matcher
// (github.com/mattfenwick/cyclonus/pkg/matcher, the engine of the cyclonus
// conformance tool): the traffic matrix of docs/networkpolicies.md is proven
// with it, and `make run` prints its verdicts. It imports nothing of
// mpiguard's.
package verdict

import (
	"fmt"

	"github.com/mattfenwick/cyclonus/pkg/matcher"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Endpoint is one end of a connection: a pod (Namespace set) or an address
// outside the cluster (Namespace empty).
type Endpoint struct {
	// Namespace and Labels of a pod. The namespace carries the
	// kubernetes.io/metadata.name label the apiserver sets on every Namespace.
	Namespace string
	Labels    map[string]string
	// IP is the pod's or the outside address; policies' ipBlocks match it.
	IP string
}

// Pod is a pod of namespace ns with labels, at ip.
func Pod(ns string, labels map[string]string, ip string) Endpoint {
	return Endpoint{Namespace: ns, Labels: labels, IP: ip}
}

// External is an address outside the cluster.
func External(ip string) Endpoint { return Endpoint{IP: ip} }

// Connection is one connection attempt: From opens a Protocol connection to
// To's Port.
type Connection struct {
	From, To Endpoint
	Port     int
	Protocol corev1.Protocol
}

// Verdict says whether a connection passes both the egress policies of its
// source and the ingress policies of its destination.
type Verdict struct {
	Allowed bool
	// Egress and Ingress are each side's own verdict.
	Egress, Ingress bool
}

func (v Verdict) String() string {
	switch {
	case v.Allowed:
		return "allowed"
	case !v.Egress && !v.Ingress:
		return "refused (egress of the source and ingress of the destination)"
	case !v.Egress:
		return "refused (egress of the source)"
	}
	return "refused (ingress of the destination)"
}

// Judge is the verdict of policies (all of them, in any namespaces) on c.
func Judge(policies []*networkingv1.NetworkPolicy, c Connection) Verdict {
	p := matcher.BuildNetworkPolicies(false, policies)
	r := p.IsTrafficAllowed(&matcher.Traffic{
		Source:       peer(c.From),
		Destination:  peer(c.To),
		ResolvedPort: c.Port,
		Protocol:     c.Protocol,
	})
	return Verdict{Allowed: r.IsAllowed(), Egress: r.Egress.IsAllowed(), Ingress: r.Ingress.IsAllowed()}
}

func peer(e Endpoint) *matcher.TrafficPeer {
	if e.Namespace == "" {
		return &matcher.TrafficPeer{IP: e.IP}
	}
	return &matcher.TrafficPeer{IP: e.IP, Internal: &matcher.InternalPeer{
		Namespace:       e.Namespace,
		NamespaceLabels: map[string]string{corev1.LabelMetadataName: e.Namespace},
		PodLabels:       e.Labels,
	}}
}

// String is c as people read it: "10.0.0.1 → 52.216.0.1:443/TCP".
func (c Connection) String() string {
	return fmt.Sprintf("%s → %s:%d/%s", c.From.name(), c.To.name(), c.Port, c.Protocol)
}

func (e Endpoint) name() string {
	if e.Namespace == "" {
		return e.IP
	}
	return e.Namespace + "/" + e.IP
}
