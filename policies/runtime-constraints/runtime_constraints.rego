# runtime-constraints: a TrainJob is held to the limits a cluster admin states
# on its runtime with annotations (docs/runtimes.md, runtimes/constraints): at
# most mpiguard.io/max-nodes hostfile nodes, at most mpiguard.io/max-gpus-per-worker
# GPUs per Worker, launcher and Worker pods pinned to the nodes labelled
# mpiguard.io/required-node-labels, and only from the namespaces of
# mpiguard.io/allowed-namespaces. Go parses the annotations once
# (input.runtime.constraints); a malformed one denies, so an admin's typo never
# silently lifts a limit. The semantics are those of runtimes/constraints.Check.
package mpiguard.policies.runtime_constraints

import data.mpiguard.lib

runtime := input.runtime.name

deny contains lib.violation("spec.runtimeRef.name", msg_constraint_malformed(err)) if {
	lib.mpi_job
	some err in input.runtime.constraints.errors
}

msg_constraint_malformed(err) := sprintf(
	"%s %s has a malformed constraint annotation (%s), so mpiguard cannot tell which TrainJobs the runtime allows; a cluster admin must fix the annotation on the runtime (see docs/runtimes.md), or use another runtime",
	[input.runtime.kind, runtime, err],
)

deny contains lib.violation("spec.runtimeRef.name", msg_namespace_not_allowed) if {
	lib.mpi_job
	count(input.runtime.constraints.allowedNamespaces) > 0
	not namespace_allowed
}

msg_namespace_not_allowed := sprintf(
	"runtime %s may only be used from namespaces %s, and this TrainJob is in %q; use another runtime or ask a cluster admin to allow the namespace (mpiguard.io/allowed-namespaces)",
	[runtime, concat(", ", input.runtime.constraints.allowedNamespaces), input.trainJob.namespace],
)

deny contains lib.violation("spec.trainer.numNodes", msg_too_many_workers) if {
	lib.mpi_job
	input.job.numNodes > input.runtime.constraints.maxNodes
}

msg_too_many_workers := sprintf(
	"TrainJob asks for %d hostfile nodes (spec.trainer.numNodes) but runtime %s allows at most %d per TrainJob (mpiguard.io/max-nodes); lower spec.trainer.numNodes to %d or less",
	[input.job.numNodes, runtime, input.runtime.constraints.maxNodes, input.runtime.constraints.maxNodes],
)

deny contains lib.violation("spec.trainer.resourcesPerNode", msg_too_many_gpus) if {
	lib.mpi_job
	input.job.gpusPerWorker > input.runtime.constraints.maxGPUsPerWorker
}

msg_too_many_gpus := sprintf(
	"TrainJob gives each Worker %d GPUs but runtime %s allows at most %d per Worker (mpiguard.io/max-gpus-per-worker); request %d or fewer GPUs per node in spec.trainer.resourcesPerNode and add Workers instead",
	[input.job.gpusPerWorker, runtime, input.runtime.constraints.maxGPUsPerWorker, input.runtime.constraints.maxGPUsPerWorker],
)

# Every launcher and Worker pod, as the Trainer will create it (after every
# runtime patch), must be pinned to nodes carrying each required label.
deny contains lib.violation("spec.runtimePatches", msg_not_pinned(rj, missing)) if {
	lib.mpi_job
	required := input.runtime.constraints.requiredNodeLabels
	some rj in input.job.replicatedJobs
	rj.role in {"launcher", "worker"}
	missing := {label_text(key, value) |
		some key, value in required
		not pinned(key, value, rj.nodeSelector, rj.requiredNodeSelectorTerms)
	}
	count(missing) > 0
}

msg_not_pinned(rj, missing) := sprintf(
	"the %s pods are not pinned to nodes labelled %s, which runtime %s requires (mpiguard.io/required-node-labels); add them to the pods' nodeSelector with spec.runtimePatches, or ask a cluster admin to pin the runtime's pods",
	[lib.role_label(rj), concat(", ", sort(missing)), runtime],
)

label_text(key, "") := key

label_text(key, value) := sprintf("%s=%s", [key, value]) if value != ""

# pinned says whether pods with this nodeSelector and these required node
# selector terms only run on nodes labelled key=value ("" = key, any value).
# nodeSelector and required affinity are ANDed, so either one suffices.
pinned(key, "", selector, _) if selector[key]

pinned(key, value, selector, _) if {
	value != ""
	selector[key] == value
}

# Required terms are ORed: every term must pin the label.
pinned(key, value, _, terms) if {
	count(terms) > 0
	every term in terms {
		term_pins(key, value, term)
	}
}

# A term pins key=value with an In expression whose values are all value; it
# pins the bare key with any In or an Exists expression.
term_pins(key, value, term) if {
	some expr in object.get(term, "matchExpressions", [])
	expr.key == key
	expr.operator == "In"
	count(expr.values) > 0
	every v in expr.values {
		v == value
	}
}

term_pins(key, "", term) if {
	some expr in object.get(term, "matchExpressions", [])
	expr.key == key
	expr.operator in {"In", "Exists"}
}

namespace_allowed if {
	some pattern in input.runtime.constraints.allowedNamespaces
	namespace_matches(pattern, input.trainJob.namespace)
}

# Patterns are path.Match globs (checked by Go). glob.match reads them the same
# way for * ? [...] and \, once path.Match's [^...] is written [!...]; braces
# are literal to path.Match but syntax to glob.match, and a namespace name
# cannot contain them, so such a pattern matches nothing.
namespace_matches(pattern, ns) if pattern == ns

namespace_matches(pattern, ns) if {
	not contains(pattern, "{")
	not contains(pattern, "}")
	glob.match(replace(pattern, "[^", "[!"), ["/"], ns)
}
