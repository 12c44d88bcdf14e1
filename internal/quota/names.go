package quota

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Kinds of quota resource names a pod is charged for.
const (
	KindPods     = "pods"
	KindRequests = "requests"
	KindLimits   = "limits"
)

// ChargedName maps a quota resource name to what pods are charged for it, the
// way the pod quota evaluator does: pods and count/pods; requests.X and the
// standard names cpu, memory, ephemeral-storage, hugepages-*; limits.X. Other
// names (count/*, services, storage classes) are not charged by pods: ok false.
func ChargedName(name corev1.ResourceName) (kind, res string, ok bool) {
	n := string(name)
	switch {
	case n == string(corev1.ResourcePods) || n == "count/pods":
		return KindPods, "", true
	case strings.HasPrefix(n, "requests."):
		return KindRequests, strings.TrimPrefix(n, "requests."), true
	case strings.HasPrefix(n, "limits."):
		return KindLimits, strings.TrimPrefix(n, "limits."), true
	case n == "cpu" || n == "memory" || n == "ephemeral-storage" || strings.HasPrefix(n, "hugepages-"):
		return KindRequests, n, true
	}
	return "", "", false
}

// ChargedFor is what a pod whose quota usage is `usage` (render.Charge.QuotaUsage,
// the pod evaluator's mapping that the render fidelity suite checks against the
// apiserver, or its Canonical names only) counts for quota resource name; ok
// is false for names pods are never charged for.
func ChargedFor(name corev1.ResourceName, usage corev1.ResourceList) (amount resource.Quantity, ok bool) {
	canonical, ok := canonicalName(name)
	if !ok {
		return resource.Quantity{}, false
	}
	if amount, found := usage[name]; found {
		return amount.DeepCopy(), true
	}
	return usage[canonical].DeepCopy(), true
}

// canonicalName is the one name of what quota resource name charges pods
// for: pods (for count/pods), requests.X (for X: cpu, memory, ...), limits.X.
func canonicalName(name corev1.ResourceName) (corev1.ResourceName, bool) {
	kind, res, ok := ChargedName(name)
	switch {
	case !ok:
		return "", false
	case kind == KindPods:
		return corev1.ResourcePods, true
	}
	return corev1.ResourceName(kind + "." + res), true
}

// Canonical keeps of usage only the names no other name stands for (pods,
// requests.*, limits.*): ChargedFor reads every other name through them. A
// reservation entry stores no name twice.
func Canonical(usage corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(usage))
	for name, amount := range usage {
		if c, ok := canonicalName(name); ok && c == name {
			out[name] = amount
		}
	}
	return out
}
