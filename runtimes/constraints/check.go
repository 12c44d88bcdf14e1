package constraints

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Job is what a TrainJob will create, as far as constraints care. The policy
// engineer builds it from the render package's JobView.
type Job struct {
	Namespace   string
	RuntimeName string
	// NumNodes is spec.trainer.numNodes: the hostfile nodes.
	NumNodes      int32
	GPUsPerWorker int64
	// PodNodeLabels maps each launcher/Worker role to the node labels its pods
	// are pinned to (nodeSelector plus required node affinity In/single-value terms).
	PodNodeLabels map[string]map[string]string
}

// Check is the reference semantics of the constraints, shared with the Rego
// policies' tests: each violation names the field to change, the numbers, and
// the fix.
func (c Constraints) Check(j Job) field.ErrorList {
	var errs field.ErrorList
	if !c.NamespaceAllowed(j.Namespace) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "runtimeRef", "name"),
			fmt.Sprintf("runtime %s may only be used from namespaces %s, and this TrainJob is in %q; use another runtime or ask a cluster admin to allow the namespace (%s)",
				j.RuntimeName, strings.Join(c.AllowedNamespaces, ", "), j.Namespace, AnnotationAllowedNamespaces)))
	}
	if c.MaxNodes != nil && j.NumNodes > *c.MaxNodes {
		errs = append(errs, field.Invalid(field.NewPath("spec", "trainer", "numNodes"), j.NumNodes,
			fmt.Sprintf("asks for %d hostfile nodes (spec.trainer.numNodes) but runtime %s allows at most %d per TrainJob (%s); lower spec.trainer.numNodes to %d or less",
				j.NumNodes, j.RuntimeName, *c.MaxNodes, AnnotationMaxNodes, *c.MaxNodes)))
	}
	if c.MaxGPUsPerWorker != nil && j.GPUsPerWorker > *c.MaxGPUsPerWorker {
		errs = append(errs, field.Invalid(field.NewPath("spec", "trainer", "resourcesPerNode"), j.GPUsPerWorker,
			fmt.Sprintf("gives each Worker %d GPUs but runtime %s allows at most %d per Worker (%s); request %d or fewer GPUs per node and add Workers instead",
				j.GPUsPerWorker, j.RuntimeName, *c.MaxGPUsPerWorker, AnnotationMaxGPUsPerWorker, *c.MaxGPUsPerWorker)))
	}
	if len(c.RequiredNodeLabels) > 0 {
		roles := make([]string, 0, len(j.PodNodeLabels))
		for r := range j.PodNodeLabels {
			roles = append(roles, r)
		}
		sort.Strings(roles)
		for _, role := range roles {
			if missing := missingLabels(c.RequiredNodeLabels, j.PodNodeLabels[role]); len(missing) > 0 {
				errs = append(errs, field.Invalid(field.NewPath("spec", "runtimePatches"), role,
					fmt.Sprintf("the %s pods are not pinned to nodes labelled %s, which runtime %s requires (%s); add them to the pods' nodeSelector",
						roleLabel(role), strings.Join(missing, ", "), j.RuntimeName, AnnotationRequiredNodeLabels)))
			}
		}
	}
	return errs
}

func missingLabels(required, have map[string]string) []string {
	var missing []string
	for k, v := range required {
		got, ok := have[k]
		if !ok || (v != "" && got != v) {
			if v == "" {
				missing = append(missing, k)
			} else {
				missing = append(missing, k+"="+v)
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// roleLabel names a role in messages as the policies do: "Launcher",
// "Worker", any other name as it is.
func roleLabel(role string) string {
	switch role {
	case "launcher":
		return "Launcher"
	case "worker":
		return "Worker"
	}
	return role
}
