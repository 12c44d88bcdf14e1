# runtime-constraints: a TrainJob is held to the limits a cluster admin states
# on its runtime with annotations (docs/runtimes.md, runtimes/constraints): at
# most mpiguard.io/max-nodes hostfile nodes, at most mpiguard.io/max-gpus-per-worker
# GPUs per Worker, Launcher and Worker pods pinned to the nodes labelled
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

# Priority (mpiguard.io/allowed-priority-classes): the priority classes a job
# names must be allowed: its Kueue WorkloadPriorityClass (the TrainJob label
# kueue.x-k8s.io/priority-class) and its Launcher and Worker pods'
# priorityClassName (the runtime template's: Volcano gives it to the
# PodGroup, kube-scheduler preempts by it).
allowed_classes := input.runtime.constraints.allowedPriorityClasses

priority_label := "kueue.x-k8s.io/priority-class"

priority_field := sprintf("metadata.labels[%s]", [priority_label])

deny contains lib.violation(priority_field, msg_priority_not_allowed(class)) if {
	lib.mpi_job
	count(allowed_classes) > 0
	class := input.trainJob.labels[priority_label]
	not class in allowed_classes
}

msg_priority_not_allowed(class) := sprintf(
	"TrainJob asks for priority class %q (label %s) but runtime %s allows only %s (mpiguard.io/allowed-priority-classes); set the label to one of them%s",
	[class, priority_label, runtime, concat(", ", allowed_classes), default_hint],
)

deny contains lib.violation("spec.runtimeRef.name", msg_pod_priority_not_allowed(rj)) if {
	lib.mpi_job
	count(allowed_classes) > 0
	some rj in input.job.replicatedJobs
	rj.role in {"launcher", "worker"}
	class := object.get(rj, "priorityClassName", "")
	class != ""
	not class in allowed_classes
}

msg_pod_priority_not_allowed(rj) := sprintf(
	"the %s pods run at priority class %q (the runtime template's priorityClassName) but runtime %s allows only %s (mpiguard.io/allowed-priority-classes); a cluster admin must fix the runtime's template, or use another runtime",
	[lib.role_label(rj), rj.priorityClassName, runtime, concat(", ", allowed_classes)],
)

default_hint := sprintf(" (the runtime's default is %q)", [input.runtime.constraints.defaultPriorityClass])

default default_hint := ""

# A new job that names no priority class at all (no Kueue label, no pod
# priorityClassName) gets the runtime's default
# (mpiguard.io/default-priority-class) as its Kueue label.
mutate contains {"target": "trainJob", "field": "metadata.labels", "key": priority_label, "value": default_class} if {
	lib.mpi_job
	lib.is_create
	default_class := input.runtime.constraints.defaultPriorityClass
	not input.trainJob.labels[priority_label]
	not pods_name_a_class
}

pods_name_a_class if {
	some rj in input.job.replicatedJobs
	object.get(rj, "priorityClassName", "") != ""
}

# Gang schedule timeout (mpiguard.io/gang-schedule-timeout-seconds): a
# coscheduling gang waits at most scheduleTimeoutSeconds for all its pods
# before its pods are rejected and retried; the runtime requires a timeout in
# the range. Volcano's PodGroup has no timeout: Volcano gangs are not judged.
timeout_range := input.runtime.constraints.gangScheduleTimeoutSeconds

deny contains lib.violation("spec.runtimeRef.name", msg_gang_timeout(timeout)) if {
	lib.mpi_job
	timeout_range
	input.gang.scheduler == "coscheduling"
	timeout := object.get(input.gang, "scheduleTimeoutSeconds", 0)
	not timeout_in_range(timeout)
}

timeout_in_range(t) if {
	t > 0
	t >= object.get(timeout_range, "min", 1)
	not t > object.get(timeout_range, "max", t)
}

msg_gang_timeout(0) := sprintf(
	"runtime %s gives its coscheduling gang no schedule timeout but requires one of %s (mpiguard.io/gang-schedule-timeout-seconds); a cluster admin must set spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds on the runtime, or use another runtime",
	[runtime, range_text],
)

msg_gang_timeout(t) := sprintf(
	"runtime %s gives its coscheduling gang a schedule timeout of %d seconds but requires %s (mpiguard.io/gang-schedule-timeout-seconds); a cluster admin must set spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds on the runtime within it, or use another runtime",
	[runtime, t, range_text],
) if t != 0

range_text := sprintf("%d to %d seconds", [timeout_range.min, timeout_range.max]) if {
	timeout_range.min
	timeout_range.max
}

range_text := sprintf("at least %d seconds", [timeout_range.min]) if not timeout_range.max

range_text := sprintf("at most %d seconds", [timeout_range.max]) if not timeout_range.min

# Gang size (mpiguard.io/gang-min-available): the job must be gang-scheduled
# (podGroupPolicy: Volcano or coscheduling), with at least that many pods in
# its gang (the PodGroup's minMember); "all": every pod of the job.
min_available := input.runtime.constraints.gangMinAvailable

deny contains lib.violation("spec.runtimeRef.name", msg_not_gang_scheduled) if {
	lib.mpi_job
	min_available
	not input.gang
}

msg_not_gang_scheduled := sprintf(
	"runtime %s requires its jobs to be gang-scheduled (mpiguard.io/gang-min-available: %v) but has no spec.podGroupPolicy, so its pods would start one by one; a cluster admin must give the runtime a Volcano or coscheduling podGroupPolicy, or use a gang variant of it",
	[runtime, min_available],
)

deny contains lib.violation("spec.trainer.numNodes", msg_gang_too_small(want)) if {
	lib.mpi_job
	want := min_available_pods
	input.gang.minMember < want
}

min_available_pods := input.job.total.pods if min_available == "all"

min_available_pods := min_available if is_number(min_available)

msg_gang_too_small(want) := sprintf(
	"TrainJob's gang holds %d pods (its PodGroup's minMember) but runtime %s requires at least %d to start together (mpiguard.io/gang-min-available: %v); raise spec.trainer.numNodes so the job has %d pods or more",
	[input.gang.minMember, runtime, want, min_available, want],
)
