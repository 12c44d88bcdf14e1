package quota

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mpiguard/mpiguard/internal/render"
)

// Part is what the pods of one replicated job of a job charge the quotas,
// or, in the part of no replicated job, what the job's other objects count.
// Parts name no quota: every decision charges them against the
// ResourceQuotas that exist then (Charge), so a quota created or changed
// while the job waits for its pods counts them too.
type Part struct {
	// ReplicatedJob is the JobSet replicated job (launcher, node, ...);
	// empty in the part of the job's other objects.
	ReplicatedJob string
	// Pods is how many pods it creates; none in the part of the job's
	// other objects.
	Pods int32
	// PerPod is what one of its pods counts for quota, by the canonical
	// names of the apiserver's pod quota evaluator (pods, requests.*,
	// limits.*); Scope is what quota scopes select its pods by.
	PerPod corev1.ResourceList
	Scope  Scope
	// Jobs is how many Jobs the JobSet controller creates for this
	// replicated job (count/jobs.batch): held until all its pods exist.
	Jobs int32
	// Objects is, in the part of no replicated job, what the job's other
	// objects (JobSet, Service, Secret, ConfigMaps, PodGroup,
	// PersistentVolumeClaims) count for object-count quotas, by their
	// count/<resource>.<group> names: held until any pod of the job exists.
	Objects corev1.ResourceList
}

// PartsOf is what a rendered job's pods will count for quota: for each
// replicated job with pods, one pod's usage and the fields quota scopes
// select it by, and its Jobs; then the other objects the job creates
// (objects.go) in a part of no replicated job. Objects that exist already
// count nothing. Parts name no quota: every decision charges them against
// the ResourceQuotas that exist then (Charge). A job whose pods another
// cluster runs (RunsElsewhere) has no parts.
func PartsOf(view *render.JobView) []Part {
	if view.RunsElsewhere {
		return nil
	}
	jobs, objects := ObjectsOf(view)
	var parts []Part
	for j := range view.ReplicatedJobs {
		rj := &view.ReplicatedJobs[j]
		if rj.Pods <= 0 {
			continue
		}
		parts = append(parts, Part{
			ReplicatedJob: rj.Name, Pods: rj.Pods, Jobs: jobs[rj.Name],
			PerPod: Canonical(rj.PerPod.QuotaUsage()), Scope: ScopeOfReplicatedJob(rj),
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
		parts = append(parts, Part{Objects: objects})
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
func Missing(parts []Part, existing map[string]int32) []Part {
	if len(existing) == 0 {
		return parts
	}
	var out []Part
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
// exact, and, when q has no scopes, what their objects count for it.
func Charge(parts []Part, q *corev1.ResourceQuota) corev1.ResourceList {
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
		if p.PerPod == nil || !SelectsScope(q, p.Scope) {
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
