package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Parameters are the cluster settings of every policy: enforcement, namespace
// exemptions and the policy's own parameters (input.parameters[policy] in Rego).
// They are read from YAML:
//
//	policies:
//	  slots-gpus:
//	    enforcement: warn            # deny (default), warn or dryrun
//	    exemptNamespaces: [sandbox, "team-x-*"]
//	    parameters: {mode: at-most}
type Parameters struct {
	Policies map[string]PolicySettings `json:"policies,omitempty"`
}

// PolicySettings configures one policy.
type PolicySettings struct {
	// Enforcement defaults to deny.
	Enforcement Enforcement `json:"enforcement,omitempty"`
	// ExemptNamespaces are namespace names, or prefixes ending in "*", the policy
	// does not apply to (neither validation nor mutation).
	ExemptNamespaces []string `json:"exemptNamespaces,omitempty"`
	// ReplaceExemptNamespaces makes this document's ExemptNamespaces replace
	// those of the documents it is merged over (the embedded
	// policies/parameters.yaml: istio-opt-out's istio-system) instead of
	// adding to them, so a default exemption is dropped only on purpose.
	ReplaceExemptNamespaces bool `json:"replaceExemptNamespaces,omitempty"`
	// Parameters are passed to the policy as input.parameters[<policy>].
	Parameters map[string]any `json:"parameters,omitempty"`
}

// ParseParameters reads a parameters document strictly: unknown keys and
// unknown enforcement values are errors, so a typo never silently relaxes a policy.
func ParseParameters(data []byte) (Parameters, error) {
	var p Parameters
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return Parameters{}, fmt.Errorf("parameters: %w", err)
	}
	for name, s := range p.Policies {
		switch s.Enforcement {
		case "", EnforceDeny, EnforceWarn, EnforceDryRun:
		default:
			return Parameters{}, fmt.Errorf("parameters: policy %q: enforcement %q is not one of deny, warn, dryrun", name, s.Enforcement)
		}
	}
	return p, nil
}

// Merge returns p overlaid with o: for each policy in o, a set enforcement
// replaces p's, exempt namespaces are added to p's (replace them with
// replaceExemptNamespaces: true), and parameters are merged key by key.
func (p Parameters) Merge(o Parameters) Parameters {
	out := Parameters{Policies: maps.Clone(p.Policies)}
	if out.Policies == nil {
		out.Policies = map[string]PolicySettings{}
	}
	for name, s := range o.Policies {
		base := out.Policies[name]
		if s.Enforcement != "" {
			base.Enforcement = s.Enforcement
		}
		if s.ReplaceExemptNamespaces {
			base.ExemptNamespaces = slices.Clone(s.ExemptNamespaces)
			base.ReplaceExemptNamespaces = true
		} else {
			own := base.ExemptNamespaces
			for _, ns := range s.ExemptNamespaces {
				if !slices.Contains(own, ns) {
					base.ExemptNamespaces = append(slices.Clip(base.ExemptNamespaces), ns)
				}
			}
		}
		if len(s.Parameters) > 0 {
			merged := maps.Clone(base.Parameters)
			if merged == nil {
				merged = map[string]any{}
			}
			maps.Copy(merged, s.Parameters)
			base.Parameters = merged
		}
		out.Policies[name] = base
	}
	return out
}

// enforcement returns the policy's enforcement, deny when unset.
func (s PolicySettings) enforcement() Enforcement {
	if s.Enforcement == "" {
		return EnforceDeny
	}
	return s.Enforcement
}

// exempt says whether the policy skips namespace ns.
func (s PolicySettings) exempt(ns string) bool {
	for _, pattern := range s.ExemptNamespaces {
		if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
			if strings.HasPrefix(ns, prefix) {
				return true
			}
		} else if pattern == ns {
			return true
		}
	}
	return false
}

// unknownPolicies lists configured policies the policy set does not have:
// settings for them would silently do nothing.
func (p Parameters) unknownPolicies(known map[string]bool) []string {
	var out []string
	for name := range p.Policies {
		if !known[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
