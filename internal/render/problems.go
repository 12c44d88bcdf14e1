package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// k8s.io/kubernetes/pkg/apis/core/validation cannot be imported sanely: the
// k8s.io/kubernetes module is not meant to be a dependency (its go.mod pins the
// staging repositories at v0.0.0 through replace directives). So this file is a
// focused copy of the rules that a rendered pod template can break although the
// TrainJob that produced it is valid — the ones resource merging can cause:
//   - validateResourceRequirements (core/validation/validation.go): quantities are not
//     negative, extended resources are whole numbers, a request is at most its limit,
//     and equal to it for resources that cannot be overcommitted (GPUs and other
//     extended resources, hugepages), which also need a limit when requested;
//   - the LimitRanger admission plugin's validation (PodValidateLimitFunc): a
//     container's request is at least the LimitRange min, its limit at most the max.
// Messages repeat the apiserver's wording and add why and how to fix it.

// templateProblems validates one rendered pod template as Job validation does
// (before pod defaulting: a limit without a request is fine there). The JobSet
// controller's Job is rejected for these.
func templateProblems(spec *corev1.PodSpec, podPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		errs = append(errs, resourceProblems(&c.Resources, podPath.Child("initContainers").Key(c.Name).Child("resources"))...)
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		errs = append(errs, resourceProblems(&c.Resources, podPath.Child("containers").Key(c.Name).Child("resources"))...)
	}
	if spec.Resources != nil {
		errs = append(errs, resourceProblems(spec.Resources, podPath.Child("resources"))...)
	}
	errs = append(errs, podSpecProblems(spec, podPath)...)
	return errs
}

// admittedPodProblems validates the pod after defaulting and mutating admission, as
// pod creation does: a LimitRange default limit below the container's request makes
// a valid template produce invalid pods. Problems already found on the template are
// not repeated.
func admittedPodProblems(pod *corev1.Pod, podPath *field.Path, found field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	add := func(list field.ErrorList) {
		for _, e := range list {
			dup := false
			for _, f := range found {
				if f.Type == e.Type && sameResource(f.Field, e.Field) {
					dup = true
					break
				}
			}
			if !dup {
				e.Detail += " (in the pod as the apiserver admits it: requests default to limits, then the namespace's LimitRange defaults apply)"
				errs = append(errs, e)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		add(resourceProblems(&c.Resources, podPath.Child("initContainers").Key(c.Name).Child("resources")))
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		add(resourceProblems(&c.Resources, podPath.Child("containers").Key(c.Name).Child("resources")))
	}
	return errs
}

// sameResource tells whether two field paths name the same container resource,
// whether under requests or limits.
func sameResource(a, b string) bool {
	norm := func(s string) string { return strings.Replace(s, ".limits[", ".requests[", 1) }
	return norm(a) == norm(b)
}

const hangHint = "the apiserver would reject the pods, so the TrainJob would be admitted but never start"

func resourceProblems(res *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := path.Child("limits"), path.Child("requests")
	// In name order: the problems end up in denial messages and the decision
	// log, which must not change from one evaluation of a job to the next
	// (FuzzRender found map order reaching them).
	for _, name := range slices.Sorted(maps.Keys(res.Limits)) {
		errs = append(errs, quantityProblems(name, res.Limits[name], limPath.Key(string(name)))...)
	}
	for _, name := range slices.Sorted(maps.Keys(res.Requests)) {
		q := res.Requests[name]
		p := reqPath.Key(string(name))
		errs = append(errs, quantityProblems(name, q, p)...)
		limit, hasLimit := res.Limits[name]
		switch {
		case hasLimit && !overcommitAllowed(name) && q.Cmp(limit) != 0:
			errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf(
				"must be equal to %s limit of %s (%s cannot be overcommitted); %s; set request and limit of %s to the same value",
				name, limit.String(), name, hangHint, name)))
		case hasLimit && q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf(
				"must be less than or equal to %s limit of %s; %s; lower the %s request to at most %s or raise the limit (resourcesPerNode is merged key by key with the runtime's resources)",
				name, limit.String(), hangHint, name, limit.String())))
		case !hasLimit && !overcommitAllowed(name):
			errs = append(errs, field.Required(limPath.Key(string(name)), fmt.Sprintf(
				"Limit must be set for non overcommitable resources: %s is requested (%s) without a limit; %s; set the %s limit equal to the request",
				name, q.String(), hangHint, name)))
		}
	}
	return errs
}

func quantityProblems(name corev1.ResourceName, q resource.Quantity, path *field.Path) field.ErrorList {
	if !strings.Contains(string(name), "/") && !standardContainerResource(name) {
		// validateContainerResourceName: "gpu: 1" instead of "nvidia.com/gpu: 1".
		return field.ErrorList{field.Invalid(path, name, fmt.Sprintf(
			"must be a standard resource for containers (cpu, memory, ephemeral-storage, hugepages-<size>); %s; extended resources need their vendor prefix, e.g. nvidia.com/gpu",
			hangHint))}
	}
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(path, q.String(), "must be greater than or equal to 0")}
	}
	if isExtendedResourceName(name) && q.MilliValue()%1000 != 0 {
		return field.ErrorList{field.Invalid(path, q.String(), fmt.Sprintf("must be an integer: %s is counted in whole devices", name))}
	}
	return nil
}

// standardContainerResource mirrors helper.IsStandardContainerResourceName.
func standardContainerResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// overcommitAllowed mirrors helper.IsOvercommitAllowed: native resources other than
// hugepages may have requests below limits.
func overcommitAllowed(name corev1.ResourceName) bool {
	native := !strings.Contains(string(name), "/") || strings.Contains(string(name), "kubernetes.io/")
	return native && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// limitRangeProblems checks an admitted pod against the Container items of the
// namespace's LimitRanges, as LimitRanger's validation does.
func (a *admissionContext) limitRangeProblems(pod *corev1.Pod, podPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range a.limitRanges {
		lr := &a.limitRanges[i]
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			check := func(c *corev1.Container, cPath *field.Path) {
				for _, name := range slices.Sorted(maps.Keys(item.Min)) { // stable messages, as in resourceProblems
					minimum := item.Min[name]
					if req, ok := c.Resources.Requests[name]; ok && req.Cmp(minimum) < 0 {
						errs = append(errs, field.Forbidden(cPath.Child("resources", "requests").Key(string(name)), fmt.Sprintf(
							"minimum %s usage per Container is %s, but request is %s (LimitRange %q); %s; raise the request to at least %s",
							name, minimum.String(), req.String(), lr.Name, hangHint, minimum.String())))
					}
				}
				for _, name := range slices.Sorted(maps.Keys(item.Max)) {
					maximum := item.Max[name]
					lim, ok := c.Resources.Limits[name]
					switch {
					case !ok:
						errs = append(errs, field.Forbidden(cPath.Child("resources", "limits").Key(string(name)), fmt.Sprintf(
							"maximum %s usage per Container is %s, but no limit is specified (LimitRange %q); %s; set a %s limit of at most %s",
							name, maximum.String(), lr.Name, hangHint, name, maximum.String())))
					case lim.Cmp(maximum) > 0:
						errs = append(errs, field.Forbidden(cPath.Child("resources", "limits").Key(string(name)), fmt.Sprintf(
							"maximum %s usage per Container is %s, but limit is %s (LimitRange %q); %s; lower the limit to at most %s",
							name, maximum.String(), lim.String(), lr.Name, hangHint, maximum.String())))
					}
				}
			}
			for j := range pod.Spec.InitContainers {
				check(&pod.Spec.InitContainers[j], podPath.Child("initContainers").Key(pod.Spec.InitContainers[j].Name))
			}
			for j := range pod.Spec.Containers {
				check(&pod.Spec.Containers[j], podPath.Child("containers").Key(pod.Spec.Containers[j].Name))
			}
		}
	}
	return errs
}
