package quota

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/mpiguard/mpiguard/internal/render"
)

// Selects says whether a quota's scopes and scope selector select a pod with
// this spec, following the kube-apiserver's pod evaluator: Terminating
// (activeDeadlineSeconds set), NotTerminating, BestEffort, NotBestEffort,
// PriorityClass (In, NotIn, Exists, DoesNotExist) and CrossNamespacePodAffinity.
func Selects(q *corev1.ResourceQuota, spec *corev1.PodSpec) bool {
	return SelectsScope(q, ScopeOf(spec))
}

// Scope is what ResourceQuota scopes select a pod by.
type Scope struct {
	// PriorityClassName of the pods (scope PriorityClass).
	PriorityClassName string
	// Terminating: the pods set activeDeadlineSeconds (scopes Terminating,
	// NotTerminating).
	Terminating bool
	// BestEffort: no container requests or limits cpu or memory (scopes
	// BestEffort, NotBestEffort).
	BestEffort bool
	// CrossNamespaceAffinity: a pod (anti-)affinity term names other
	// namespaces (scope CrossNamespacePodAffinity).
	CrossNamespaceAffinity bool
}

// ScopeOf is what quota scopes select a pod with this spec by.
func ScopeOf(spec *corev1.PodSpec) Scope {
	return Scope{
		PriorityClassName:      spec.PriorityClassName,
		Terminating:            terminating(spec),
		BestEffort:             bestEffort(spec),
		CrossNamespaceAffinity: crossNamespaceAffinity(spec),
	}
}

// ScopeOfReplicatedJob is the scope of rj's pods as admitted: their
// PriorityClass is the one admission gives them (the globalDefault class
// for pods that name none), which PriorityClass scopes select by.
func ScopeOfReplicatedJob(rj *render.ReplicatedJobView) Scope {
	s := ScopeOf(&rj.PodTemplate.Spec)
	if rj.PriorityClassName != "" {
		s.PriorityClassName = rj.PriorityClassName
	}
	return s
}

// SelectsScope says whether quota q selects pods of scope s (Selects).
func SelectsScope(q *corev1.ResourceQuota, s Scope) bool {
	for _, scope := range q.Spec.Scopes {
		if !scopeMatches(corev1.ScopedResourceSelectorRequirement{ScopeName: scope, Operator: corev1.ScopeSelectorOpExists}, s) {
			return false
		}
	}
	if q.Spec.ScopeSelector != nil {
		for _, req := range q.Spec.ScopeSelector.MatchExpressions {
			if !scopeMatches(req, s) {
				return false
			}
		}
	}
	return true
}

func scopeMatches(req corev1.ScopedResourceSelectorRequirement, s Scope) bool {
	switch req.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return s.Terminating
	case corev1.ResourceQuotaScopeNotTerminating:
		return !s.Terminating
	case corev1.ResourceQuotaScopeBestEffort:
		return s.BestEffort
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !s.BestEffort
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return s.CrossNamespaceAffinity
	case corev1.ResourceQuotaScopePriorityClass:
		pc := s.PriorityClassName
		switch req.Operator {
		case corev1.ScopeSelectorOpExists:
			return pc != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return pc == ""
		case corev1.ScopeSelectorOpIn:
			return slices.Contains(req.Values, pc)
		case corev1.ScopeSelectorOpNotIn:
			return !slices.Contains(req.Values, pc)
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

// Terminating says whether the quota scope Terminating selects a pod with this
// spec (activeDeadlineSeconds set).
func Terminating(spec *corev1.PodSpec) bool { return terminating(spec) }
