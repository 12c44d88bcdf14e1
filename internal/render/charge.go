package render

import (
	"slices"
	"strings"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
)

// This file charges a pod the way a kube-apiserver (v1.36) with default feature
// gates charges it against ResourceQuota. The steps, in the apiserver's order:
//  1. decoding a Pod defaults each container's missing requests to its limits
//     (k8s.io/kubernetes pkg/apis/core/v1/defaults.go SetDefaults_Pod);
//  2. the LimitRanger admission plugin fills missing container limits and requests
//     from the namespace's LimitRanges (plugin/pkg/admission/limitranger, mergeContainerResources);
//  3. the RuntimeClass admission plugin sets spec.overhead from the pod's RuntimeClass
//     (the ServiceAccount, Priority and DefaultTolerationSeconds plugins, which
//     change no charge, are in admitted.go and admitPriority);
//  4. the quota pod evaluator (pkg/quota/v1/evaluator/core/pods.go PodUsageFunc) sums
//     requests and limits with k8s.io/component-helpers/resource PodRequests/PodLimits:
//     init containers by the max rule, restartable init containers (sidecars) added,
//     overhead added, pod-level resources honoured (PodLevelResources is on by default).

// podResourcesOptions are the options PodUsageFunc passes with default feature gates:
// InPlacePodVerticalScaling is GA (status resources are used; a new pod has none) and
// PodLevelResources is beta and on.
var podResourcesOptions = resourcehelper.PodResourcesOptions{
	UseStatusResources:    true,
	SkipPodLevelResources: false,
}

// quotaRequiredResources are the only resources for which a ResourceQuota demands
// that every container declares a value (the evaluator's validationSet).
var quotaRequiredResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// admissionContext is what admission adds to every pod of the namespace.
type admissionContext struct {
	defaults       corev1.ResourceRequirements
	runtimeClasses []nodev1.RuntimeClass
	limitRanges    []corev1.LimitRange
	// priorityClasses are the cluster's (none: not known, not judged).
	priorityClasses []schedulingv1.PriorityClass
	// serviceAccounts are the namespace's (none: not known, not judged).
	serviceAccounts []corev1.ServiceAccount
}

// withPriorityClasses is a with the cluster's PriorityClasses.
func (a *admissionContext) withPriorityClasses(classes []schedulingv1.PriorityClass) *admissionContext {
	a.priorityClasses = classes
	return a
}

// admitPriority is the Priority admission plugin on a new pod: no class
// named, the globalDefault class (the lowest valued of several) is set; a
// class named that does not exist is a problem.
func (a *admissionContext) admitPriority(pod *corev1.Pod, podPath *field.Path) field.ErrorList {
	if len(a.priorityClasses) == 0 {
		return nil
	}
	name := pod.Spec.PriorityClassName
	if name == "" {
		var def *schedulingv1.PriorityClass
		for i := range a.priorityClasses {
			if pc := &a.priorityClasses[i]; pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
				def = pc
			}
		}
		if def != nil {
			pod.Spec.PriorityClassName = def.Name
		}
		return nil
	}
	if slices.ContainsFunc(a.priorityClasses, func(pc schedulingv1.PriorityClass) bool { return pc.Name == name }) {
		return nil
	}
	return field.ErrorList{field.NotFound(podPath.Child("priorityClassName"),
		name+": the Priority admission plugin rejects pods whose PriorityClass does not exist (no PriorityClass with name "+name+" was found); "+hangHint+"; create the PriorityClass or name one that exists")}
}

func newAdmissionContext(limitRanges []corev1.LimitRange, runtimeClasses []nodev1.RuntimeClass) *admissionContext {
	return &admissionContext{
		defaults:       limitRangeContainerDefaults(limitRanges),
		runtimeClasses: runtimeClasses,
		limitRanges:    limitRanges,
	}
}

// limitRangeContainerDefaults collects the Container defaults of all LimitRanges as
// LimitRanger does: default -> limits, defaultRequest -> requests, later ranges win.
func limitRangeContainerDefaults(limitRanges []corev1.LimitRange) corev1.ResourceRequirements {
	var req corev1.ResourceRequirements
	for i := range limitRanges {
		for _, item := range limitRanges[i].Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for k, v := range item.DefaultRequest {
				if req.Requests == nil {
					req.Requests = corev1.ResourceList{}
				}
				req.Requests[k] = v.DeepCopy()
			}
			for k, v := range item.Default {
				if req.Limits == nil {
					req.Limits = corev1.ResourceList{}
				}
				req.Limits[k] = v.DeepCopy()
			}
		}
	}
	return req
}

// admittedPod returns the pod the apiserver would store for template, after
// defaulting and mutating admission, and the problems admission would reject it for.
func (a *admissionContext) admittedPod(template *corev1.PodTemplateSpec, podPath *field.Path) (*corev1.Pod, field.ErrorList) {
	pod := &corev1.Pod{ObjectMeta: template.ObjectMeta, Spec: *template.Spec.DeepCopy()}
	// Decoding: SetDefaults_Pod, containers first, then pod-level requests.
	for i := range pod.Spec.InitContainers {
		defaultRequestsToLimits(&pod.Spec.InitContainers[i].Resources)
	}
	for i := range pod.Spec.Containers {
		defaultRequestsToLimits(&pod.Spec.Containers[i].Resources)
	}
	defaultPodLevelRequests(pod)
	// Mutating admission: LimitRanger, then RuntimeClass.
	for i := range pod.Spec.InitContainers {
		mergeLimitRangeDefaults(&pod.Spec.InitContainers[i].Resources, &a.defaults)
	}
	for i := range pod.Spec.Containers {
		mergeLimitRangeDefaults(&pod.Spec.Containers[i].Resources, &a.defaults)
	}
	var problems field.ErrorList
	if name := pod.Spec.RuntimeClassName; name != nil && *name != "" {
		idx := slices.IndexFunc(a.runtimeClasses, func(rc nodev1.RuntimeClass) bool { return rc.Name == *name })
		switch {
		case idx < 0:
			problems = append(problems, field.NotFound(podPath.Child("runtimeClassName"),
				*name+": the RuntimeClass admission plugin rejects pods whose RuntimeClass does not exist; create it or remove runtimeClassName"))
		case a.runtimeClasses[idx].Overhead != nil:
			fixed := a.runtimeClasses[idx].Overhead.PodFixed
			if pod.Spec.Overhead != nil && !resourceListsEqual(pod.Spec.Overhead, fixed) {
				problems = append(problems, field.Invalid(podPath.Child("overhead"), pod.Spec.Overhead,
					"pod overhead differs from the overhead of RuntimeClass "+*name+"; remove spec.overhead, admission sets it"))
			}
			pod.Spec.Overhead = fixed.DeepCopy()
		}
	}
	problems = append(problems, a.admitServiceAccount(pod, podPath)...)
	problems = append(problems, a.admitPriority(pod, podPath)...)
	problems = append(problems, a.limitRangeProblems(pod, podPath)...)
	return pod, problems
}

// defaultRequestsToLimits is SetDefaults_Pod for one container: a resource with a
// limit and no request gets the limit as request.
func defaultRequestsToLimits(res *corev1.ResourceRequirements) {
	for k, v := range res.Limits {
		if _, ok := res.Requests[k]; !ok {
			if res.Requests == nil {
				res.Requests = corev1.ResourceList{}
			}
			res.Requests[k] = v.DeepCopy()
		}
	}
}

// defaultPodLevelRequests is defaultPodRequests (core/v1 defaults, PodLevelResources
// on): with pod-level limits, missing pod-level requests default to the containers'
// aggregate request, else to the pod-level limit. (Pod-level hugepage limit
// defaulting is not reproduced: hugepages at pod level are not used by MPI runtimes.)
func defaultPodLevelRequests(pod *corev1.Pod) {
	if pod.Spec.Resources == nil || len(pod.Spec.Resources.Limits) == 0 {
		return
	}
	reqs := pod.Spec.Resources.Requests
	if reqs == nil {
		reqs = corev1.ResourceList{}
	}
	for k, v := range resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{}) {
		if _, ok := reqs[k]; !ok && resourcehelper.IsSupportedPodLevelResource(k) && overcommitAllowed(k) {
			reqs[k] = v.DeepCopy()
		}
	}
	for k, v := range pod.Spec.Resources.Limits {
		if _, ok := reqs[k]; !ok && resourcehelper.IsSupportedPodLevelResource(k) {
			reqs[k] = v.DeepCopy()
		}
	}
	if len(reqs) > 0 {
		pod.Spec.Resources.Requests = reqs
	}
}

// mergeLimitRangeDefaults is LimitRanger's mergeContainerResources: missing limits
// and requests come from the LimitRange defaults.
func mergeLimitRangeDefaults(res *corev1.ResourceRequirements, defaults *corev1.ResourceRequirements) {
	for k, v := range defaults.Limits {
		if _, ok := res.Limits[k]; !ok {
			if res.Limits == nil {
				res.Limits = corev1.ResourceList{}
			}
			res.Limits[k] = v.DeepCopy()
		}
	}
	for k, v := range defaults.Requests {
		if _, ok := res.Requests[k]; !ok {
			if res.Requests == nil {
				res.Requests = corev1.ResourceList{}
			}
			res.Requests[k] = v.DeepCopy()
		}
	}
}

// PodQuotaUsage is what a pod that exists is charged against ResourceQuota,
// by quota resource name (Charge.QuotaUsage): the apiserver's quota
// admission charged it so at its create, and the quota controller counts
// it so while it runs.
func PodQuotaUsage(pod *corev1.Pod) corev1.ResourceList { return podCharge(pod).QuotaUsage() }

// podCharge is what one admitted pod is charged against ResourceQuota.
func podCharge(pod *corev1.Pod) Charge {
	c := Charge{
		Requests: resourcehelper.PodRequests(pod, podResourcesOptions),
		Limits:   resourcehelper.PodLimits(pod, podResourcesOptions),
		Pods:     1,
	}
	// With pod-level resources the evaluator does not require container values.
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return c
	}
	for _, name := range quotaRequiredResources {
		if slices.ContainsFunc(pod.Spec.InitContainers, func(ct corev1.Container) bool { return !hasResource(ct.Resources.Requests, name) }) ||
			slices.ContainsFunc(pod.Spec.Containers, func(ct corev1.Container) bool { return !hasResource(ct.Resources.Requests, name) }) {
			c.MissingRequests = append(c.MissingRequests, name)
		}
		if slices.ContainsFunc(pod.Spec.InitContainers, func(ct corev1.Container) bool { return !hasResource(ct.Resources.Limits, name) }) ||
			slices.ContainsFunc(pod.Spec.Containers, func(ct corev1.Container) bool { return !hasResource(ct.Resources.Limits, name) }) {
			c.MissingLimits = append(c.MissingLimits, name)
		}
	}
	return c
}

func hasResource(list corev1.ResourceList, name corev1.ResourceName) bool {
	_, ok := list[name]
	return ok
}

// addCharge adds n pods of perPod to total.
func addCharge(total *Charge, perPod *Charge, n int32) {
	if n <= 0 {
		return
	}
	total.Pods += perPod.Pods * int64(n)
	total.Requests = addScaled(total.Requests, perPod.Requests, n)
	total.Limits = addScaled(total.Limits, perPod.Limits, n)
	total.MissingRequests = mergeNames(total.MissingRequests, perPod.MissingRequests)
	total.MissingLimits = mergeNames(total.MissingLimits, perPod.MissingLimits)
}

// addScaled returns into + n*list, exactly (inf.Dec arithmetic, no overflow).
func addScaled(into, list corev1.ResourceList, n int32) corev1.ResourceList {
	if len(list) == 0 {
		return into
	}
	if into == nil {
		into = make(corev1.ResourceList, len(list))
	}
	factor := inf.NewDec(int64(n), 0)
	for name, q := range list {
		scaled := q
		if n != 1 {
			d := new(inf.Dec).Mul(q.AsDec(), factor)
			scaled = *resource.NewDecimalQuantity(*d, q.Format)
		}
		if cur, ok := into[name]; ok {
			cur.Add(scaled)
			into[name] = cur
		} else {
			into[name] = scaled.DeepCopy()
		}
	}
	return into
}

func mergeNames(a, b []corev1.ResourceName) []corev1.ResourceName {
	for _, n := range b {
		if !slices.Contains(a, n) {
			a = append(a, n)
		}
	}
	slices.Sort(a)
	return a
}

func resourceListsEqual(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// QuotaUsage maps the charge to ResourceQuota resource names the way the pod quota
// evaluator does (pods.go podComputeUsageHelper): cpu and memory count as both
// "cpu" and "requests.cpu", limits as "limits.cpu"; ephemeral-storage likewise;
// hugepages as "hugepages-*" and "requests.hugepages-*"; extended resources (GPUs)
// only as "requests.<name>"; "pods" and "count/pods" are the pod count.
func (c Charge) QuotaUsage() corev1.ResourceList {
	out := make(corev1.ResourceList, 2*len(c.Requests)+len(c.Limits)+2)
	pods := *resource.NewQuantity(c.Pods, resource.DecimalSI)
	out[corev1.ResourcePods] = pods
	out["count/pods"] = pods.DeepCopy()
	for _, pair := range [...]struct{ req, reqQ, lim corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := c.Requests[pair.req]; ok {
			out[pair.req] = q.DeepCopy()
			out[pair.reqQ] = q.DeepCopy()
		}
		if q, ok := c.Limits[pair.req]; ok {
			out[pair.lim] = q.DeepCopy()
		}
	}
	for name, q := range c.Requests {
		switch {
		case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			out[name] = q.DeepCopy()
			out[corev1.DefaultResourceRequestsPrefix+name] = q.DeepCopy()
		case isExtendedResourceName(name):
			out[corev1.DefaultResourceRequestsPrefix+name] = q.DeepCopy()
		}
	}
	return out
}

// isExtendedResourceName mirrors v1helper.IsExtendedResourceName plus the DRA
// device-class prefix (scheduler util IsDRAExtendedResourceName): a resource that is
// not in the kubernetes.io namespace and not itself a quota "requests." name.
func isExtendedResourceName(name corev1.ResourceName) bool {
	s := string(name)
	if strings.HasPrefix(s, "deviceclass.resource.kubernetes.io/") {
		return true
	}
	if !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/") {
		return false
	}
	return !strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
}
