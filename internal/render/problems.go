package render

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
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

// limitRangeProblems checks an admitted pod against the namespace's
// LimitRanges as LimitRanger's validation does (PodValidateLimitFunc):
// Container items against each container and init container, Pod items
// against the pod's summed requests and limits (without overhead), each by
// min, max and maxLimitRequestRatio, comparing in milli units where they
// fit as it does.
func (a *admissionContext) limitRangeProblems(pod *corev1.Pod, podPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range a.limitRanges {
		lr := &a.limitRanges[i]
		for _, item := range lr.Spec.Limits {
			switch item.Type {
			case corev1.LimitTypeContainer:
				for j := range pod.Spec.InitContainers {
					c := &pod.Spec.InitContainers[j]
					errs = append(errs, limitItemProblems(lr.Name, &item, c.Resources.Requests, c.Resources.Limits, podPath.Child("initContainers").Key(c.Name), "Container")...)
				}
				for j := range pod.Spec.Containers {
					c := &pod.Spec.Containers[j]
					errs = append(errs, limitItemProblems(lr.Name, &item, c.Resources.Requests, c.Resources.Limits, podPath.Child("containers").Key(c.Name), "Container")...)
				}
			case corev1.LimitTypePod:
				opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
				errs = append(errs, limitItemProblems(lr.Name, &item, resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts), podPath, "Pod")...)
			}
		}
	}
	return errs
}

// limitItemProblems is LimitRanger's minConstraint, maxConstraint and
// limitRequestRatioConstraint of one LimitRange item on one container's
// (or pod's, kind "Pod") requests and limits, reported at path.
func limitItemProblems(lrName string, item *corev1.LimitRangeItem, requests, limits corev1.ResourceList, path *field.Path, kind string) field.ErrorList {
	var errs field.ErrorList
	// A Pod item's amounts are the pod's sums: reported at the pod's own
	// resources.
	requestsPath, limitsPath := path.Child("resources", "requests"), path.Child("resources", "limits")
	for _, name := range slices.Sorted(maps.Keys(item.Min)) { // stable messages, as in resourceProblems
		minimum := item.Min[name]
		req, hasReq := requests[name]
		lim, hasLim := limits[name]
		r, l, m := enforcedValues(req, lim, minimum)
		switch {
		case !hasReq:
			errs = append(errs, field.Forbidden(requestsPath.Key(string(name)), fmt.Sprintf(
				"minimum %s usage per %s is %s, but no request is specified (LimitRange %q); %s; request at least %s",
				name, kind, minimum.String(), lrName, hangHint, minimum.String())))
		case r < m:
			errs = append(errs, field.Forbidden(requestsPath.Key(string(name)), fmt.Sprintf(
				"minimum %s usage per %s is %s, but request is %s (LimitRange %q); %s; raise the request to at least %s",
				name, kind, minimum.String(), req.String(), lrName, hangHint, minimum.String())))
		case hasLim && l < m:
			errs = append(errs, field.Forbidden(limitsPath.Key(string(name)), fmt.Sprintf(
				"minimum %s usage per %s is %s, but limit is %s (LimitRange %q); %s; raise the limit to at least %s",
				name, kind, minimum.String(), lim.String(), lrName, hangHint, minimum.String())))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(item.Max)) {
		maximum := item.Max[name]
		req, hasReq := requests[name]
		lim, hasLim := limits[name]
		r, l, m := enforcedValues(req, lim, maximum)
		switch {
		case !hasLim:
			errs = append(errs, field.Forbidden(limitsPath.Key(string(name)), fmt.Sprintf(
				"maximum %s usage per %s is %s, but no limit is specified (LimitRange %q); %s; set a %s limit of at most %s",
				name, kind, maximum.String(), lrName, hangHint, name, maximum.String())))
		case l > m:
			errs = append(errs, field.Forbidden(limitsPath.Key(string(name)), fmt.Sprintf(
				"maximum %s usage per %s is %s, but limit is %s (LimitRange %q); %s; lower the limit to at most %s",
				name, kind, maximum.String(), lim.String(), lrName, hangHint, maximum.String())))
		case hasReq && r > m:
			errs = append(errs, field.Forbidden(requestsPath.Key(string(name)), fmt.Sprintf(
				"maximum %s usage per %s is %s, but request is %s (LimitRange %q); %s; lower the request to at most %s",
				name, kind, maximum.String(), req.String(), lrName, hangHint, maximum.String())))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(item.MaxLimitRequestRatio)) {
		ratio := item.MaxLimitRequestRatio[name]
		req, hasReq := requests[name]
		lim, hasLim := limits[name]
		r, l, _ := enforcedValues(req, lim, ratio)
		observed := float64(l) / float64(r)
		shown, most := observed, float64(ratio.Value())
		if ratio.Value() <= resource.MaxMilliValue {
			observed, most = observed*1000, float64(ratio.MilliValue())
		}
		switch {
		case !hasReq || r == 0:
			errs = append(errs, field.Forbidden(requestsPath.Key(string(name)), fmt.Sprintf(
				"%s max limit to request ratio per %s is %s, but no request is specified or request is 0 (LimitRange %q); %s; request %s, at least its limit / %s",
				name, kind, ratio.String(), lrName, hangHint, name, ratio.String())))
		case !hasLim || l == 0:
			errs = append(errs, field.Forbidden(limitsPath.Key(string(name)), fmt.Sprintf(
				"%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0 (LimitRange %q); %s; set a %s limit of at most %s x its request",
				name, kind, ratio.String(), lrName, hangHint, name, ratio.String())))
		case observed > most:
			errs = append(errs, field.Forbidden(limitsPath.Key(string(name)), fmt.Sprintf(
				"%s max limit to request ratio per %s is %s, but provided ratio is %f (limit %s, request %s; LimitRange %q); %s; raise the request to at least %s or lower the limit",
				name, kind, ratio.String(), shown, lim.String(), req.String(), lrName, hangHint, minRequest(lim, ratio))))
		}
	}
	return errs
}

// enforcedValues is LimitRanger's requestLimitEnforcedValues: the three
// amounts in milli units when none exceeds what milli units hold, else in
// units.
func enforcedValues(request, limit, enforced resource.Quantity) (r, l, e int64) {
	r, l, e = request.Value(), limit.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		r, l, e = request.MilliValue(), limit.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

// minRequest is the least request a limit allows under a ratio, rounded up
// to a milli unit, as a quantity to write.
func minRequest(limit, ratio resource.Quantity) string {
	if ratio.MilliValue() <= 0 {
		return limit.String()
	}
	n := new(big.Int).Mul(big.NewInt(limit.MilliValue()), big.NewInt(1000))
	d := big.NewInt(ratio.MilliValue())
	n.Add(n, d).Sub(n, big.NewInt(1)).Quo(n, d) // rounded up
	if !n.IsInt64() {
		return limit.String()
	}
	return resource.NewMilliQuantity(n.Int64(), limit.Format).String()
}
