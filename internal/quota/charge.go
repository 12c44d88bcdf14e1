package quota

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/render"
)

// PartsOf is what a rendered job's pods will count for quota: for each
// replicated job with pods, one pod's usage and the fields quota scopes
// select it by, and its Jobs; then the other objects the job creates
// (objects.go) in a part of no replicated job. Objects that exist already
// count nothing. Parts name no quota: every decision charges them against
// the ResourceQuotas that exist then (Charge). A job whose pods another
// cluster runs (RunsElsewhere) has no parts.
func PartsOf(view *render.JobView) []v1alpha1.ReservedPart {
	if view.RunsElsewhere {
		return nil
	}
	jobs, objects := ObjectsOf(view)
	var parts []v1alpha1.ReservedPart
	for j := range view.ReplicatedJobs {
		rj := &view.ReplicatedJobs[j]
		if rj.Pods <= 0 {
			continue
		}
		parts = append(parts, v1alpha1.ReservedPart{
			ReplicatedJob: rj.Name, Pods: rj.Pods, Jobs: jobs[rj.Name],
			PodShape: v1alpha1.PodShape{PerPod: Canonical(rj.PerPod.QuotaUsage()), Scope: ScopeOfReplicatedJob(rj)},
		})
		delete(jobs, rj.Name)
	}
	// Jobs without pods (parallelism 0) exist as soon as the rest does.
	for _, n := range jobs {
		if objects == nil {
			objects = corev1.ResourceList{}
		}
		total := objects[JobsName]
		total.Add(*resource.NewQuantity(int64(n), resource.DecimalSI))
		objects[JobsName] = total
	}
	if len(objects) > 0 {
		parts = append(parts, v1alpha1.ReservedPart{Objects: objects})
	}
	return parts
}

// Missing reduces parts to the pods that do not exist yet: existing counts the
// job's live pods by replicated job. The apiserver's quota already counts the
// pods that exist, so only the missing ones are still held. Parts whose pods all
// exist are dropped; nil means nothing is held any more.
//
// Objects go with the pods that show they exist: a replicated job's Jobs
// stay with its part until all its pods exist; the job's other objects (the
// part of no replicated job) go as soon as any pod of the job exists, since
// the Trainer and the JobSet controller create them all before the first
// Job's pods (docs/quota.md, "Object counts").
func Missing(parts []v1alpha1.ReservedPart, existing map[string]int32) []v1alpha1.ReservedPart {
	if len(existing) == 0 {
		return parts
	}
	var out []v1alpha1.ReservedPart
	for _, p := range parts {
		if p.ReplicatedJob == "" && p.Pods == 0 {
			continue // its objects: some pod exists
		}
		if left := p.Pods - existing[p.ReplicatedJob]; left > 0 {
			p.Pods = left
			out = append(out, p)
		}
	}
	return out
}

// Charge is what parts charge quota q for each of its resource names: the
// sum over the parts q selects of pods × what one pod counts for the name,
// exact, and, when q has no scopes, what their objects count for it. A part written before parts carried their usage (no perPod) charges
// what was frozen for q's name at its admission.
func Charge(parts []v1alpha1.ReservedPart, q *corev1.ResourceQuota) corev1.ResourceList {
	var sum corev1.ResourceList
	add := func(name corev1.ResourceName, perPod resource.Quantity, pods int32) {
		if perPod.IsZero() {
			return
		}
		if sum == nil {
			sum = corev1.ResourceList{}
		}
		total := sum[name]
		total.Add(Times(perPod, int64(pods)))
		sum[name] = total
	}
	unscoped := Unscoped(q)
	for _, p := range parts {
		if unscoped && (p.Jobs > 0 || len(p.Objects) > 0) {
			for name := range q.Spec.Hard {
				if n, ok := objectCharge(name, p.Jobs, p.Objects); ok {
					add(name, n, 1)
				}
			}
		}
		if p.PerPod == nil {
			for _, c := range p.Quotas {
				if c.Quota == q.Name {
					for name, perPod := range c.PerPod {
						add(name, perPod, p.Pods)
					}
				}
			}
			continue
		}
		if !SelectsScope(q, p.Scope) {
			continue
		}
		for name := range q.Spec.Hard {
			if perPod, ok := ChargedFor(name, p.PerPod); ok {
				add(name, perPod, p.Pods)
			}
		}
	}
	return sum
}
