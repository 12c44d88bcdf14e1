package engine

import (
	"encoding/json"
	"math/big"
	"slices"
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
	if len(req.Quotas) == 0 {
		return emptyArray
	}
	out := make([]*ast.Term, 0, len(req.Quotas))
	var usage []corev1.ResourceList // per replicated job, built on first use
	for i := range req.Quotas {
		q := &req.Quotas[i]
		if usage == nil {
			usage = perPodUsage(req.View)
		}
		out = append(out, quotaTerm(q, req, usage))
	}
	return ast.ArrayTerm(out...)
}

// quotaTerm is one quota's entry of input.quotas. The whole entry is shared
// between requests by content: the quota's name, limits, usage and
// reservations, and what this job demands of it.
func quotaTerm(q *corev1.ResourceQuota, req *Request, usage []corev1.ResourceList) *ast.Term {
	v := req.View
	reserved, by := reservedFor(q, req.Reserved)
	selected := make([]bool, len(v.ReplicatedJobs))
	for j := range v.ReplicatedJobs {
		selected[j] = quotaSelects(q, &v.ReplicatedJobs[j].PodTemplate.Spec)
	}
	demand := newQuotaDemand(q, v, usage, selected, reserved)
	build := func() *ast.Term {
		roles := make([]*ast.Term, 0, len(v.ReplicatedJobs))
		for j := range v.ReplicatedJobs {
			if selected[j] {
				roles = append(roles, vocabularyTerm(v.ReplicatedJobs[j].Name))
			}
		}
		reservedBy := emptyArray
		if len(by) > 0 {
			byTerms := make([]*ast.Term, len(by))
			for k, name := range by {
				byTerms[k] = ast.StringTerm(name)
			}
			reservedBy = ast.ArrayTerm(byTerms...)
		}
		return ast.ObjectTerm(
			item(kName, vocabularyTerm(q.Name)),
			item(kHard, resourcesTerm(q.Spec.Hard)),
			item(kUsed, resourcesTerm(q.Status.Used)),
			item(kReserved, resourcesTerm(reserved)),
			item(kReservedBy, reservedBy),
			item(kRoles, ast.ArrayTerm(roles...)),
			item(kDemand, demand.term()),
		)
	}
	if demand.exotic {
		return build()
	}
	key := getKeyBuf()
	defer key.release()
	key.str(q.Name)
	key.resources(q.Spec.Hard)
	key.resources(q.Status.Used)
	key.resources(reserved)
	key.int(int64(len(by)))
	for _, name := range by {
		key.str(name)
	}
	for j := range v.ReplicatedJobs {
		if selected[j] {
			key.str(v.ReplicatedJobs[j].Name)
		}
	}
	key.int(-1)
	demand.encode(key)
	return quotaTerms.cached(key.b, build)
}

// demandEntry is what this job charges a quota for one quota resource name.
type demandEntry struct {
	name        corev1.ResourceName
	kind, res   string
	total, free int64
	parts       []demandPartKey
	// undeclared: some part leaves the resource undeclared.
	undeclared bool
}

// quotaDemand is a quota's demand entries, sorted by name.
type quotaDemand struct {
	entries []demandEntry
	// exotic: an amount beyond int64 (the term is built, never cached).
	exotic   bool
	q        *corev1.ResourceQuota
	reserved corev1.ResourceList
}

// newQuotaDemand computes what this job charges the quota, per quota resource
// name the pods are charged for: kind (requests, limits, pods), the resource,
// the total in milli units, what the quota has free for it (hard - used -
// reserved, in milli units: plain arithmetic on the quota's own numbers, done
// here once so Rego compares two integers instead of subtracting exact big
// numbers per request), and the parts (one per replicated job the scopes
// select) with their pod count, per-pod amount, and whether a container
// leaves the resource undeclared (the apiserver then rejects the pod), and
// whether any part does.
func newQuotaDemand(q *corev1.ResourceQuota, v *render.JobView, usage []corev1.ResourceList, selected []bool, reserved corev1.ResourceList) quotaDemand {
	d := quotaDemand{q: q, reserved: reserved, entries: make([]demandEntry, 0, len(q.Spec.Hard))}
	for name := range q.Spec.Hard {
		kind, res, ok := quotaKey(name)
		if !ok {
			continue
		}
		e := demandEntry{name: name, kind: kind, res: res, parts: make([]demandPartKey, 0, len(v.ReplicatedJobs))}
		for j := range v.ReplicatedJobs {
			if !selected[j] {
				continue
			}
			rj := &v.ReplicatedJobs[j]
			amount := usage[j][name]
			per := amount.MilliValue()
			e.total += per * int64(rj.Pods)
			part := demandPartKey{
				name: rj.Name, role: string(rj.Role), pods: rj.Pods, perPod: per,
				undeclared: undeclared(kind, res, &rj.PerPod),
			}
			e.undeclared = e.undeclared || part.undeclared
			e.parts = append(e.parts, part)
		}
		free, ok := freeMilli(q, name, reserved)
		if !ok {
			d.exotic = true
		}
		e.free = free
		d.entries = append(d.entries, e)
	}
	slices.SortFunc(d.entries, func(a, b demandEntry) int { return strings.Compare(string(a.name), string(b.name)) })
	return d
}

func (d *quotaDemand) encode(key *keyBuf) {
	key.int(int64(len(d.entries)))
	for _, e := range d.entries {
		key.str(string(e.name))
		key.int(e.total)
		key.int(e.free)
		key.int(int64(len(e.parts)))
		for _, p := range e.parts {
			key.str(p.name)
			key.str(p.role)
			key.int(int64(p.pods))
			key.int(p.perPod)
			if p.undeclared {
				key.int(1)
			} else {
				key.int(0)
			}
		}
	}
}

// term is the demand object: quota resource name -> entry.
func (d *quotaDemand) term() *ast.Term {
	if len(d.entries) == 0 {
		return emptyObject
	}
	items := make([][2]*ast.Term, 0, len(d.entries))
	for _, e := range d.entries {
		parts := make([]*ast.Term, len(e.parts))
		for i, p := range e.parts {
			parts[i] = demandPartTerm(p)
		}
		items = append(items, item(vocabularyTerm(string(e.name)), ast.ObjectTerm(
			item(kKind, stringTerm(e.kind)),
			item(kResource, vocabularyTerm(e.res)),
			item(kMilli, int64Term(e.total)),
			item(kFree, freeTerm(d.q, e.name, d.reserved)),
			item(kUndeclared, boolTerm(e.undeclared)),
			item(kParts, ast.ArrayTerm(parts...)),
		)))
	}
	return ast.ObjectTerm(items...)
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
	if free, ok := freeMilli(q, name, reserved); ok {
		return int64Term(free)
	}
	hard, used, held := q.Spec.Hard[name], q.Status.Used[name], reserved[name]
	h, u, r := hard.MilliValue(), used.MilliValue(), held.MilliValue()
	free := big.NewInt(h)
	free.Sub(free, big.NewInt(u))
	free.Sub(free, big.NewInt(r))
	return ast.NumberTerm(json.Number(free.String()))
}

// freeMilli is hard - used - reserved for name, false when it does not fit an int64.
func freeMilli(q *corev1.ResourceQuota, name corev1.ResourceName, reserved corev1.ResourceList) (int64, bool) {
	hard, used, held := q.Spec.Hard[name], q.Status.Used[name], reserved[name]
	if free, ok := sub(hard.MilliValue(), used.MilliValue()); ok {
		return sub(free, held.MilliValue())
	}
	return 0, false
}

// sub is a - b, and false when that overflows an int64.
func sub(a, b int64) (int64, bool) {
	d := a - b
	return d, (b >= 0) == (d <= a)
}
