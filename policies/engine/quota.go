package engine

import (
	"encoding/json"
	"math/big"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mpiguard/mpiguard/policies/render"
)

// quotasTerm builds input.quotas: for each ResourceQuota its hard limits, its
// status.used, what reserved jobs add, and which of this job's replicated jobs
// the quota's scopes select (quota.roles), so Rego sums only those.
func quotasTerm(req *Request) *ast.Term {
	out := make([]*ast.Term, 0, len(req.Quotas))
	for i := range req.Quotas {
		q := &req.Quotas[i]
		roles := make([]*ast.Term, 0, len(req.View.ReplicatedJobs))
		for j := range req.View.ReplicatedJobs {
			rj := &req.View.ReplicatedJobs[j]
			if quotaSelects(q, &rj.PodTemplate.Spec) {
				roles = append(roles, vocabularyTerm(rj.Name))
			}
		}
		reserved, by := reservedFor(q, req.Reserved)
		demand := demandTerm(q, req.View, reserved)
		reservedBy := emptyArray
		if len(by) > 0 {
			byTerms := make([]*ast.Term, len(by))
			for k, name := range by {
				byTerms[k] = ast.StringTerm(name)
			}
			reservedBy = ast.ArrayTerm(byTerms...)
		}
		out = append(out, ast.ObjectTerm(
			item(kName, vocabularyTerm(q.Name)),
			item(kHard, resourcesTerm(q.Spec.Hard)),
			item(kUsed, resourcesTerm(q.Status.Used)),
			item(kReserved, resourcesTerm(reserved)),
			item(kReservedBy, reservedBy),
			item(kRoles, ast.ArrayTerm(roles...)),
			item(kDemand, demand),
		))
	}
	return ast.ArrayTerm(out...)
}

// demandTerm is what this job charges the quota, per quota resource name the
// pods are charged for: kind (requests, limits, pods), the resource, the total
// in milli units, what the quota has free for it (hard - used - reserved, in
// milli units: plain arithmetic on the quota's own numbers, done here once so
// Rego compares two integers instead of subtracting exact big numbers per
// request), and the parts (one per replicated job the scopes select) with
// their pod count, per-pod amount, and whether a container leaves the resource
// undeclared (the apiserver then rejects the pod).
func demandTerm(q *corev1.ResourceQuota, v *render.JobView, reserved corev1.ResourceList) *ast.Term {
	obj := ast.NewObject()
	var usage []corev1.ResourceList // per replicated job, built on first use
	for name := range q.Spec.Hard {
		kind, res, ok := quotaKey(name)
		if !ok {
			continue
		}
		var total int64
		parts := make([]*ast.Term, 0, len(v.ReplicatedJobs))
		if usage == nil {
			usage = perPodUsage(v)
		}
		for j := range v.ReplicatedJobs {
			rj := &v.ReplicatedJobs[j]
			if !quotaSelects(q, &rj.PodTemplate.Spec) {
				continue
			}
			amount, _ := chargedFor(name, usage[j])
			per := amount.MilliValue()
			total += per * int64(rj.Pods)
			parts = append(parts, demandPartTerm(demandPartKey{
				name: rj.Name, role: string(rj.Role), pods: rj.Pods, perPod: per,
				undeclared: undeclared(kind, res, &rj.PerPod),
			}))
		}
		obj.Insert(vocabularyTerm(string(name)), ast.ObjectTerm(
			item(kKind, stringTerm(kind)),
			item(kResource, vocabularyTerm(res)),
			item(kMilli, int64Term(total)),
			item(kFree, freeTerm(q, name, reserved)),
			item(kParts, ast.ArrayTerm(parts...)),
		))
	}
	return ast.NewTerm(obj)
}

func undeclared(kind, res string, c *render.Charge) bool {
	var missing []corev1.ResourceName
	switch kind {
	case "requests":
		missing = c.MissingRequests
	case "limits":
		missing = c.MissingLimits
	}
	for _, m := range missing {
		if string(m) == res {
			return true
		}
	}
	return false
}

// quotaKey maps a quota resource name to what pods are charged for it, the way
// the pod quota evaluator does: pods; requests.X and the standard names cpu,
// memory, ephemeral-storage, hugepages-*; limits.X. Other names (count/*,
// services, storage classes) are not charged by pods.
func quotaKey(name corev1.ResourceName) (kind, res string, ok bool) {
	n := string(name)
	switch {
	case n == string(corev1.ResourcePods) || n == "count/pods":
		return "pods", "", true
	case strings.HasPrefix(n, "requests."):
		return "requests", strings.TrimPrefix(n, "requests."), true
	case strings.HasPrefix(n, "limits."):
		return "limits", strings.TrimPrefix(n, "limits."), true
	case n == "cpu" || n == "memory" || n == "ephemeral-storage" || strings.HasPrefix(n, "hugepages-"):
		return "requests", n, true
	}
	return "", "", false
}

// reservedFor sums, per quota resource name, what reserved jobs' pods selected
// by the quota's scopes will be charged, and names the jobs that count.
func reservedFor(q *corev1.ResourceQuota, reserved []Reservation) (corev1.ResourceList, []string) {
	sum := corev1.ResourceList{}
	var by []string
	for _, r := range reserved {
		if r.View == nil {
			continue
		}
		counted := false
		for j := range r.View.ReplicatedJobs {
			rj := &r.View.ReplicatedJobs[j]
			if rj.Pods == 0 || !quotaSelects(q, &rj.PodTemplate.Spec) {
				continue
			}
			usage := rj.PerPod.QuotaUsage()
			for name := range q.Spec.Hard {
				amount, ok := chargedFor(name, usage)
				if !ok {
					continue
				}
				amount.Mul(int64(rj.Pods))
				total := sum[name]
				total.Add(amount)
				sum[name] = total
				counted = true
			}
		}
		if counted {
			by = append(by, r.TrainJob)
		}
	}
	return sum, by
}

// chargedFor is what a pod with quota usage `usage` (render.Charge.QuotaUsage,
// the pod evaluator's mapping that the render fidelity suite checks against the
// apiserver) counts for quota resource name; ok is false for names pods are
// never charged for.
func chargedFor(name corev1.ResourceName, usage corev1.ResourceList) (resource.Quantity, bool) {
	if _, _, ok := quotaKey(name); !ok {
		return resource.Quantity{}, false
	}
	return usage[name].DeepCopy(), true
}

// quotaSelects says whether a quota's scopes and scope selector select a pod
// with this spec, following the kube-apiserver's pod evaluator: Terminating
// (activeDeadlineSeconds set), NotTerminating, BestEffort, NotBestEffort,
// PriorityClass (In, NotIn, Exists, DoesNotExist) and CrossNamespacePodAffinity.
func quotaSelects(q *corev1.ResourceQuota, spec *corev1.PodSpec) bool {
	for _, scope := range q.Spec.Scopes {
		if !scopeMatches(corev1.ScopedResourceSelectorRequirement{ScopeName: scope, Operator: corev1.ScopeSelectorOpExists}, spec) {
			return false
		}
	}
	if q.Spec.ScopeSelector != nil {
		for _, req := range q.Spec.ScopeSelector.MatchExpressions {
			if !scopeMatches(req, spec) {
				return false
			}
		}
	}
	return true
}

func scopeMatches(req corev1.ScopedResourceSelectorRequirement, spec *corev1.PodSpec) bool {
	switch req.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminating(spec)
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminating(spec)
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(spec)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(spec)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(spec)
	case corev1.ResourceQuotaScopePriorityClass:
		pc := spec.PriorityClassName
		switch req.Operator {
		case corev1.ScopeSelectorOpExists:
			return pc != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return pc == ""
		case corev1.ScopeSelectorOpIn:
			return contains(req.Values, pc)
		case corev1.ScopeSelectorOpNotIn:
			return !contains(req.Values, pc)
		}
	}
	// An unknown scope selects nothing, as in the apiserver.
	return false
}

func terminating(spec *corev1.PodSpec) bool {
	return spec.ActiveDeadlineSeconds != nil && *spec.ActiveDeadlineSeconds >= 0
}

// bestEffort: no container (init or app) requests or limits cpu or memory.
func bestEffort(spec *corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, list := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				if _, ok := list[corev1.ResourceCPU]; ok {
					return false
				}
				if _, ok := list[corev1.ResourceMemory]; ok {
					return false
				}
			}
		}
	}
	return true
}

func crossNamespaceAffinity(spec *corev1.PodSpec) bool {
	a := spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if len(t.Namespaces) > 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// perPodUsage is the quota usage of one pod of each replicated job of v.
func perPodUsage(v *render.JobView) []corev1.ResourceList {
	out := make([]corev1.ResourceList, len(v.ReplicatedJobs))
	for j := range v.ReplicatedJobs {
		out[j] = v.ReplicatedJobs[j].PerPod.QuotaUsage()
	}
	return out
}

var kFree = ast.StringTerm("free")

// freeTerm is what quota q has free for resource name, in milli units: hard
// minus status.used minus what reserved jobs hold (each 0 when absent), the
// same milli amounts the input's quantities carry, subtracted exactly (a
// negative amount means the quota is over-committed).
func freeTerm(q *corev1.ResourceQuota, name corev1.ResourceName, reserved corev1.ResourceList) *ast.Term {
	hard, used, held := q.Spec.Hard[name], q.Status.Used[name], reserved[name]
	h, u, r := hard.MilliValue(), used.MilliValue(), held.MilliValue()
	if free, ok := sub(h, u); ok {
		if free, ok = sub(free, r); ok {
			return int64Term(free)
		}
	}
	free := big.NewInt(h)
	free.Sub(free, big.NewInt(u))
	free.Sub(free, big.NewInt(r))
	return ast.NumberTerm(json.Number(free.String()))
}

// sub is a - b, and false when that overflows an int64.
func sub(a, b int64) (int64, bool) {
	d := a - b
	return d, (b >= 0) == (d <= a)
}
