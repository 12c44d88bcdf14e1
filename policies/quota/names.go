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
// apiserver) counts for quota resource name; ok is false for names pods are
// never charged for.
func ChargedFor(name corev1.ResourceName, usage corev1.ResourceList) (amount resource.Quantity, ok bool) {
	if _, _, ok := ChargedName(name); !ok {
		return resource.Quantity{}, false
	}
	return usage[name].DeepCopy(), true
}
