package quota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestQuotaSelects(t *testing.T) {
	withCPU := corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("1")}}}}}
	bestEffort := corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}
	terminating := corev1.PodSpec{ActiveDeadlineSeconds: ptr.To[int64](60), Containers: withCPU.Containers}
	high := corev1.PodSpec{PriorityClassName: "high", Containers: withCPU.Containers}
	crossNS := corev1.PodSpec{Containers: withCPU.Containers, Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone", Namespaces: []string{"other"}}},
	}}}
	priority := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ResourceQuotaSpec {
		return corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values},
		}}}
	}
	scopes := func(s ...corev1.ResourceQuotaScope) corev1.ResourceQuotaSpec {
		return corev1.ResourceQuotaSpec{Scopes: s}
	}
	cases := []struct {
		name  string
		quota corev1.ResourceQuotaSpec
		pod   corev1.PodSpec
		want  bool
	}{
		{"no scope selects everything", corev1.ResourceQuotaSpec{}, bestEffort, true},
		{"Terminating selects a pod with a deadline", scopes(corev1.ResourceQuotaScopeTerminating), terminating, true},
		{"Terminating skips a pod without one", scopes(corev1.ResourceQuotaScopeTerminating), withCPU, false},
		{"NotTerminating", scopes(corev1.ResourceQuotaScopeNotTerminating), withCPU, true},
		{"NotTerminating skips a pod with a deadline", scopes(corev1.ResourceQuotaScopeNotTerminating), terminating, false},
		{"BestEffort", scopes(corev1.ResourceQuotaScopeBestEffort), bestEffort, true},
		{"BestEffort skips a pod with requests", scopes(corev1.ResourceQuotaScopeBestEffort), withCPU, false},
		{"NotBestEffort", scopes(corev1.ResourceQuotaScopeNotBestEffort), withCPU, true},
		{"PriorityClass In", priority(corev1.ScopeSelectorOpIn, "high"), high, true},
		{"PriorityClass In, other class", priority(corev1.ScopeSelectorOpIn, "low"), high, false},
		{"PriorityClass NotIn", priority(corev1.ScopeSelectorOpNotIn, "low"), high, true},
		{"PriorityClass Exists without a class", priority(corev1.ScopeSelectorOpExists), withCPU, false},
		{"PriorityClass DoesNotExist", priority(corev1.ScopeSelectorOpDoesNotExist), withCPU, true},
		{"PriorityClass scope in the list", scopes(corev1.ResourceQuotaScopePriorityClass), high, true},
		{"CrossNamespacePodAffinity", scopes(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), crossNS, true},
		{"CrossNamespacePodAffinity skips same-namespace pods", scopes(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), withCPU, false},
		{"scopes are ANDed", scopes(corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeBestEffort), withCPU, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := &corev1.ResourceQuota{Spec: tc.quota}
			if got := Selects(q, &tc.pod); got != tc.want {
				t.Errorf("Selects = %v, want %v", got, tc.want)
			}
		})
	}
}
