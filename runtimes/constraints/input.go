package constraints

import "k8s.io/apimachinery/pkg/util/validation/field"

// PolicyInput is the runtime's constraints as the Rego policies receive them
// (e.g. under input.runtime.constraints): JSON-shaped values, absent keys for
// absent constraints, and "errors" listing malformed annotations ("path: detail")
// so a policy can deny with the admin's mistake rather than silently ignore it.
//
//	{"maxNodes": 8, "maxWorkers": 8, "maxGPUsPerWorker": 4, "requiredNodeLabels": {"pool": "gpu"},
//	 "allowedNamespaces": ["ml-*"], "errors": []}
func PolicyInput(annotations map[string]string) map[string]any {
	c, errs := Parse(annotations)
	out := map[string]any{"errors": errorStrings(errs)}
	if c.MaxNodes != nil {
		out["maxNodes"] = int64(*c.MaxNodes)
		// The former name, for policies written before maxNodes: the same
		// count (spec.trainer.numNodes).
		out["maxWorkers"] = int64(*c.MaxNodes)
	}
	if c.MaxGPUsPerWorker != nil {
		out["maxGPUsPerWorker"] = *c.MaxGPUsPerWorker
	}
	if len(c.RequiredNodeLabels) > 0 {
		labels := make(map[string]any, len(c.RequiredNodeLabels))
		for k, v := range c.RequiredNodeLabels {
			labels[k] = v
		}
		out["requiredNodeLabels"] = labels
	}
	if len(c.AllowedNamespaces) > 0 {
		ns := make([]any, len(c.AllowedNamespaces))
		for i, n := range c.AllowedNamespaces {
			ns[i] = n
		}
		out["allowedNamespaces"] = ns
	}
	governanceInput(c, out)
	return out
}

func errorStrings(errs field.ErrorList) []any {
	out := make([]any, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}
