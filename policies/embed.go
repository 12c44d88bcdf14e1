// Package policies embeds mpiguard's default policies: one folder per policy
// (gatekeeper-library layout: the Rego, its _test.rego, samples/, and its
// parameters.schema.yaml when it takes parameters), the shared lib/ package,
// and the cluster settings (parameters.yaml). internal/engine compiles them.
package policies

import "embed"

// FS holds every policy folder (parameter schemas included), lib/ and
// parameters.yaml.
//
//go:embed lib parameters.yaml aggregate-quota object-quota slots-gpus max-duration data-residency istio-opt-out runtime-constraints mpiguard-entry rendered-pods pod-security worker-image gang-scheduling node-capacity
var FS embed.FS

// ParametersFile is the name of the default parameters document in FS.
const ParametersFile = "parameters.yaml"
