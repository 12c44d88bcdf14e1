package quota

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mpiguard/mpiguard/policies/quota/api/v1alpha1"
	"github.com/mpiguard/mpiguard/policies/render"
)

// PartsOf is what a rendered job charges the namespace's quotas: for each
// replicated job with pods, and each quota whose scopes select those pods,
// what one pod charges it by the quota's resource names. Replicated jobs that
// charge no quota are left out, so a job the quotas do not limit has no parts,
// and neither has a job whose pods another cluster runs (RunsElsewhere).
func PartsOf(view *render.JobView, quotas []corev1.ResourceQuota) []v1alpha1.ReservedPart {
	if view.RunsElsewhere {
		return nil
	}
	var parts []v1alpha1.ReservedPart
	for j := range view.ReplicatedJobs {
		rj := &view.ReplicatedJobs[j]
		if rj.Pods <= 0 {
			continue
		}
		usage := rj.PerPod.QuotaUsage()
		part := v1alpha1.ReservedPart{ReplicatedJob: rj.Name, Pods: rj.Pods}
		for i := range quotas {
			q := &quotas[i]
			if !Selects(q, &rj.PodTemplate.Spec) {
				continue
			}
			perPod := corev1.ResourceList{}
			for name := range q.Spec.Hard {
				if amount, ok := ChargedFor(name, usage); ok && !amount.IsZero() {
					perPod[name] = amount
				}
			}
			if len(perPod) > 0 {
				part.Quotas = append(part.Quotas, v1alpha1.QuotaCharge{Quota: q.Name, PerPod: perPod})
			}
		}
		if len(part.Quotas) > 0 {
			slices.SortFunc(part.Quotas, func(a, b v1alpha1.QuotaCharge) int { return strings.Compare(a.Quota, b.Quota) })
			parts = append(parts, part)
		}
	}
	return parts
}

// Missing reduces parts to the pods that do not exist yet: existing counts the
// job's live pods by replicated job. The apiserver's quota already counts the
// pods that exist, so only the missing ones are still held. Parts whose pods all
// exist are dropped; nil means nothing is held any more.
func Missing(parts []v1alpha1.ReservedPart, existing map[string]int32) []v1alpha1.ReservedPart {
	if len(existing) == 0 {
		return parts
	}
	var out []v1alpha1.ReservedPart
	for _, p := range parts {
		if left := p.Pods - existing[p.ReplicatedJob]; left > 0 {
			p.Pods = left
			out = append(out, p)
		}
	}
	return out
}

// Charge is what parts charge quota (by name) for each of its resource names: the
// sum over parts of pods × per-pod amount, exact.
func Charge(parts []v1alpha1.ReservedPart, quota string) corev1.ResourceList {
	var sum corev1.ResourceList
	for _, p := range parts {
		for _, c := range p.Quotas {
			if c.Quota != quota {
				continue
			}
			for name, perPod := range c.PerPod {
				if sum == nil {
					sum = corev1.ResourceList{}
				}
				total := sum[name]
				total.Add(Times(perPod, int64(p.Pods)))
				sum[name] = total
			}
		}
	}
	return sum
}
