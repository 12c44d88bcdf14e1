package check

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mpiguard/mpiguard/internal/render"
)

// The documents check reads never went through the apiserver. What the
// apiserver would refuse must not be judged as if it existed (a TrainJob with
// 10,000 env entries or a negative deadline would be ALLOWED, a ResourceQuota
// with an unknown scope would silently count nothing), so each object is
// validated as the apiserver validates it on create, and refused with the
// apiserver's field errors. Trainer objects get the full CRD validation
// (render.ValidateAsAPIServer); core objects the rules a decision depends on.

// validateTrainer validates a Trainer object's document (JSON) as the
// apiserver would, in namespace ns (the one check assigned).
func validateTrainer(kind, ns string, js []byte) error {
	var u map[string]any
	if err := utiljson.Unmarshal(js, &u); err != nil {
		return fmt.Errorf("invalid %s: %w", kind, err)
	}
	if ns != "" {
		meta, _ := u["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			u["metadata"] = meta
		}
		meta["namespace"] = ns
	}
	errs, err := render.ValidateAsAPIServer(context.Background(), kind, u)
	if err != nil {
		return err
	}
	return invalid(kind, u, errs)
}

// invalid words field errors as the apiserver does: `TrainJob "x" is invalid: ...`.
func invalid(kind string, u map[string]any, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	name := ""
	if meta, ok := u["metadata"].(map[string]any); ok {
		name, _ = meta["name"].(string)
	}
	return fmt.Errorf("%s %q is invalid (the apiserver would refuse it): %w", kind, name, errs.ToAggregate())
}

func validateNamespace(ns *corev1.Namespace) error {
	errs := validation.ValidateObjectMeta(&ns.ObjectMeta, false, validation.ValidateNamespaceName, field.NewPath("metadata"))
	return invalid("Namespace", map[string]any{"metadata": map[string]any{"name": ns.Name}}, errs)
}

// validateQuota is the part of the apiserver's ResourceQuota validation
// (ValidateResourceQuota in k8s.io/kubernetes pkg/apis/core/validation) that
// changes what a quota counts: amounts non-negative and whole for countable
// resources, scopes known, not conflicting, and fitting the resources.
func validateQuota(q *corev1.ResourceQuota) error {
	errs := validation.ValidateObjectMeta(&q.ObjectMeta, true, validation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	errs = append(errs, quotaAmounts(q.Spec.Hard, spec.Child("hard"))...)
	errs = append(errs, quotaAmounts(q.Status.Hard, field.NewPath("status", "hard"))...)
	errs = append(errs, quotaAmounts(q.Status.Used, field.NewPath("status", "used"))...)

	scopes := map[corev1.ResourceQuotaScope]bool{}
	for i, s := range q.Spec.Scopes {
		errs = append(errs, quotaScope(s, q.Spec.Hard, spec.Child("scopes").Index(i))...)
		scopes[s] = true
	}
	if sel := q.Spec.ScopeSelector; sel != nil {
		for i, req := range sel.MatchExpressions {
			p := spec.Child("scopeSelector", "matchExpressions").Index(i)
			errs = append(errs, quotaScope(req.ScopeName, q.Spec.Hard, p.Child("scopeName"))...)
			switch req.Operator {
			case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
				if len(req.Values) == 0 {
					errs = append(errs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
				}
			case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
				if len(req.Values) != 0 {
					errs = append(errs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
				}
			default:
				errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
			}
			scopes[req.ScopeName] = true
		}
	}
	for _, pair := range [][2]corev1.ResourceQuotaScope{
		{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort},
		{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating},
	} {
		if scopes[pair[0]] && scopes[pair[1]] {
			errs = append(errs, field.Invalid(spec.Child("scopes"), q.Spec.Scopes, "conflicting scopes"))
		}
	}
	return invalid("ResourceQuota", map[string]any{"metadata": map[string]any{"name": q.Name}}, errs)
}

func quotaAmounts(list corev1.ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(list)) { // stable messages
		q := list[name]
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p.Key(string(name)), q.String(), "must be greater than or equal to 0"))
		} else if countable(name) && q.MilliValue()%1000 != 0 {
			// The apiserver's own test (ValidateResourceQuantityValue),
			// overflow included: an amount past the int64 range of milli
			// units wraps around there and is refused as not an integer.
			errs = append(errs, field.Invalid(p.Key(string(name)), q.String(), "must be an integer"))
		}
	}
	return errs
}

// countable: pods, object counts and extended resources (GPUs) come in whole units.
func countable(name corev1.ResourceName) bool {
	s := strings.TrimPrefix(strings.TrimPrefix(string(name), "requests."), "limits.")
	return s == "pods" || strings.HasPrefix(s, "count/") ||
		(strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/") && !strings.HasPrefix(s, "hugepages-"))
}

// quotaScope checks a scope's name and that it can apply to each standard
// resource of hard (IsResourceQuotaScopeValidForResource).
func quotaScope(s corev1.ResourceQuotaScope, hard corev1.ResourceList, p *field.Path) field.ErrorList {
	podCompute := map[corev1.ResourceName]bool{"pods": true, "cpu": true, "memory": true,
		"requests.cpu": true, "requests.memory": true, "limits.cpu": true, "limits.memory": true}
	otherStandard := map[corev1.ResourceName]bool{"services": true, "secrets": true, "configmaps": true,
		"persistentvolumeclaims": true, "replicationcontrollers": true, "resourcequotas": true, "requests.storage": true,
		"services.nodeports": true, "services.loadbalancers": true}
	var allowed func(corev1.ResourceName) bool
	switch s {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		allowed = func(n corev1.ResourceName) bool { return podCompute[n] }
	case corev1.ResourceQuotaScopeBestEffort:
		allowed = func(n corev1.ResourceName) bool { return n == "pods" }
	default:
		return field.ErrorList{field.NotSupported(p, s, []string{
			string(corev1.ResourceQuotaScopeTerminating), string(corev1.ResourceQuotaScopeNotTerminating),
			string(corev1.ResourceQuotaScopeBestEffort), string(corev1.ResourceQuotaScopeNotBestEffort),
			string(corev1.ResourceQuotaScopePriorityClass), string(corev1.ResourceQuotaScopeCrossNamespacePodAffinity),
		})}
	}
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(hard)) {
		if (podCompute[name] || otherStandard[name]) && !allowed(name) {
			errs = append(errs, field.Invalid(p, s, fmt.Sprintf("unsupported scope applied to resource %s", name)))
		}
	}
	return errs
}
