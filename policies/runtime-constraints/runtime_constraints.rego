# runtime-constraints: a TrainJob is held to the limits a cluster admin states
# on its runtime with annotations (docs/runtimes.md, runtimes/constraints): at
# most mpiguard.io/max-workers Workers, at most mpiguard.io/max-gpus-per-worker
# GPUs per Worker, launcher and Worker pods pinned to the nodes labelled
# mpiguard.io/required-node-labels, and only from the namespaces of
# mpiguard.io/allowed-namespaces. Go parses the annotations once
# (input.runtime.constraints); a malformed one denies, so an admin's typo never
# silently lifts a limit. The semantics are those of runtimes/constraints.Check.
package mpiguard.policies.runtime_constraints

import data.mpiguard.lib

# The limits are read as input.runtime.constraints.<name> in each rule, not
# through an alias rule: with an alias every evaluation cost about 60 more
# allocations (BenchmarkPolicies), though most runtimes state no constraint.

runtime := input.runtime.name

deny contains lib.violation("spec.runtimeRef.name", lib.msg_constraint_malformed(input.runtime.kind, runtime, err)) if {
	lib.mpi_job
	some err in input.runtime.constraints.errors
}

deny contains lib.violation("spec.runtimeRef.name", lib.msg_namespace_not_allowed(runtime, input.runtime.constraints.allowedNamespaces, input.trainJob.namespace)) if {
	lib.mpi_job
	count(input.runtime.constraints.allowedNamespaces) > 0
	not namespace_allowed
}

deny contains lib.violation("spec.trainer.numNodes", lib.msg_too_many_workers(input.job.numNodes, runtime, input.runtime.constraints.maxWorkers)) if {
	lib.mpi_job
	input.job.numNodes > input.runtime.constraints.maxWorkers
}

deny contains lib.violation("spec.trainer.resourcesPerNode", lib.msg_too_many_gpus(input.job.gpusPerWorker, runtime, input.runtime.constraints.maxGPUsPerWorker)) if {
	lib.mpi_job
	input.job.gpusPerWorker > input.runtime.constraints.maxGPUsPerWorker
}

# Every launcher and Worker pod, as the Trainer will create it (after every
# runtime patch), must be pinned to nodes carrying each required label.
deny contains lib.violation("spec.runtimePatches", lib.msg_not_pinned(rj, missing, runtime)) if {
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
