package quota

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/quota/v1/generic"

	"github.com/mpiguard/mpiguard/internal/render"
)

// JobsName is the quota resource name that counts Jobs.
var JobsName = ObjectCountName(schema.GroupResource{Group: "batch", Resource: "jobs"})

// ObjectCountName is the quota resource name that counts objects of gr,
// count/<resource>.<group> (count/<resource> for the core group), as the
// apiserver's object count evaluators name it.
func ObjectCountName(gr schema.GroupResource) corev1.ResourceName {
	return generic.ObjectCountQuotaResourceNameFor(gr)
}

// legacyCounts are the names ResourceQuota counted core objects by before
// count/*: each counts what count/<name> counts.
var legacyCounts = map[corev1.ResourceName]bool{
	corev1.ResourceConfigMaps: true, corev1.ResourceSecrets: true, corev1.ResourceServices: true,
	corev1.ResourcePersistentVolumeClaims: true, corev1.ResourceReplicationControllers: true, corev1.ResourceQuotas: true,
}

// ObjectCounted is the count/ name that quota resource name counts objects
// by (configmaps counts what count/configmaps counts); ok is false for names
// that count no objects, and for pods and count/pods, which pods are charged
// for (ChargedName).
func ObjectCounted(name corev1.ResourceName) (corev1.ResourceName, bool) {
	switch {
	case name == "count/pods":
		return "", false
	case strings.HasPrefix(string(name), "count/"):
		return name, true
	case legacyCounts[name]:
		return "count/" + name, true
	}
	return "", false
}

// ObjectsOf is what the objects of view that do not exist yet count for
// object-count quotas, by count/ name: those of each replicated job's Jobs
// (jobs), and all the others (rest).
func ObjectsOf(view *render.JobView) (jobs map[string]int32, rest corev1.ResourceList) {
	jobs = map[string]int32{}
	for i := range view.Objects {
		o := &view.Objects[i]
		n := o.Missing()
		if n == 0 {
			continue
		}
		if o.ReplicatedJob != "" && o.GVK.Group == "batch" && o.Resource == "jobs" {
			jobs[o.ReplicatedJob] += n
			continue
		}
		if rest == nil {
			rest = corev1.ResourceList{}
		}
		name := ObjectCountName(o.GroupResource())
		total := rest[name]
		total.Add(*resource.NewQuantity(int64(n), resource.DecimalSI))
		rest[name] = total
	}
	return jobs, rest
}

// objectCharge is what a part's objects count for quota resource name; ok
// is false when they count nothing for it.
func objectCharge(name corev1.ResourceName, jobs int32, objects corev1.ResourceList) (resource.Quantity, bool) {
	counted, ok := ObjectCounted(name)
	if !ok {
		return resource.Quantity{}, false
	}
	if counted == JobsName && jobs > 0 {
		return *resource.NewQuantity(int64(jobs), resource.DecimalSI), true
	}
	amount, found := objects[counted]
	return amount.DeepCopy(), found && !amount.IsZero()
}

// Unscoped says whether q has no scopes: only such a quota counts objects
// other than pods (the apiserver's object count, service and claim
// evaluators match no pod scope).
func Unscoped(q *corev1.ResourceQuota) bool {
	return len(q.Spec.Scopes) == 0 && (q.Spec.ScopeSelector == nil || len(q.Spec.ScopeSelector.MatchExpressions) == 0)
}
