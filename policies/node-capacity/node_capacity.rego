# node-capacity: a job must fit the cluster's nodes. Quota can admit a job
# whose pods no node can hold: the reservation then holds the namespace's
# quota while the pods stay Pending forever.
#
# Go (internal/capacity) supplies input.capacity from the rendered pods and
# the cluster's Nodes by shape: for each replicated job, the nodes its pods
# may run on (node selector, required node affinity, tolerations, cordoned
# nodes, its RuntimeClass's scheduling; mpiguard's own placement and Kueue's
# flavor are in the rendered pods) and how many of them have the
# allocatable for one pod; for the Launcher and Workers together, what each
# node shape holds of them. input.capacity is absent when no Nodes are known
# (the webhook's cache holds none, `mpiguard check` was given no Node
# documents): nothing is judged.
#
# A pod no eligible node can ever hold is denied (shapeEnforcement "warn"
# for clusters whose autoscaler creates larger nodes from zero). A gang whose
# pods cannot all run at once on the eligible nodes' allocatable is warned
# about (gangEnforcement "deny" refuses it); nodeGroups adds the nodes a
# cluster autoscaler may still create.
package mpiguard.policies.node_capacity

import data.mpiguard.lib

# The parameters (defaults and meaning: parameters.schema.yaml).
params := input.parameters["node-capacity"]

capacity := input.capacity

# judged: a new job, or a suspended one being resumed (Kueue's flavor is in
# its pods then). A running job's other updates are not judged again.
judged if lib.is_create

judged if {
	input.request.operation == "UPDATE"
	input.oldTrainJob.suspend == true
	not input.trainJob.suspend
}

deny contains v if {
	params.shapeEnforcement == "deny"
	some v in shape_violations
}

warn contains v if {
	params.shapeEnforcement == "warn"
	some v in shape_violations
}

deny contains v if {
	params.gangEnforcement == "deny"
	some v in gang_violations
}

warn contains v if {
	params.gangEnforcement == "warn"
	some v in gang_violations
}

# A pod that no node it may run on can hold: fix its requests.
shape_violations contains lib.violation(field_of(rj), msg_too_large(rj)) if {
	lib.mpi_job
	judged
	some rj in capacity.replicatedJobs
	rj.pods > 0
	rj.eligibleNodes > 0
	rj.fittingNodes == 0
}

msg_too_large(rj) := sprintf(
	"each %s pod asks %s; the largest of the %s it may run on has %s, so no node can ever hold it and the job would wait with its pods Pending; ask for at most what the largest node has, or select nodes large enough (nodeSelector, node affinity)",
	[role_name(rj), asks(rj), nodes_phrase(rj.eligibleNodes), largest(rj)],
) if count(rj.short) > 0

msg_too_large(rj) := sprintf(
	"each %s pod asks %s; none of the %s it may run on has all of it at once, so no node can ever hold it and the job would wait with its pods Pending; ask for less, or select nodes large enough (nodeSelector, node affinity)",
	[role_name(rj), all_requests(rj), nodes_phrase(rj.eligibleNodes)],
) if count(rj.short) == 0

# A pod that may run on no node at all: fix its placement.
shape_violations contains lib.violation("spec.runtimePatches", msg_no_node(rj)) if {
	lib.mpi_job
	judged
	some rj in capacity.replicatedJobs
	rj.pods > 0
	rj.eligibleNodes == 0
}

msg_no_node(rj) := sprintf(
	"no node may run the %s pods: of %s, %s, so the job would wait with its pods Pending; select nodes that exist (nodeSelector, node affinity) or tolerate their taints",
	[role_name(rj), nodes_phrase(capacity.nodes), concat(", ", exclusions(rj))],
)

exclusions(rj) := [s |
	some [n, why] in [
		[rj.excluded.selector, "do not match its node selector or required node affinity"],
		[rj.excluded.taints, "have taints it does not tolerate"],
		[rj.excluded.unschedulable, "are cordoned (spec.unschedulable)"],
	]
	n > 0
	s := sprintf("%d %s", [n, why])
]

# The Launcher and Workers cannot all run at once.
gang_violations contains lib.violation("spec.trainer.numNodes", msg_gang(gang, most)) if {
	lib.mpi_job
	judged
	gang := capacity.gang
	not unplaceable
	most := gang_capacity
	most < gang.workers
}

msg_gang(gang, most) := sprintf(
	"the %d Workers%s cannot all run at once: the nodes they may run on hold at most %d Workers%s (%s), so the job would hold its quota and wait with pods Pending until the cluster grows; use at most %d Workers (spec.trainer.numNodes), or ask an admin for nodes (a cluster autoscaler's node groups are named in the node-capacity parameter nodeGroups)",
	[gang.workers, launcher_phrase(gang), most, beside_launcher(gang), concat(", ", shape_phrases(gang)), most],
)

launcher_phrase(gang) := " and the Launcher" if gang.launcher

launcher_phrase(gang) := "" if not gang.launcher

beside_launcher(gang) := " beside the Launcher" if gang.launcher

beside_launcher(gang) := "" if not gang.launcher

shape_phrases(gang) := [s |
	some shape in gang.shapes
	shape.nodes > 0
	s := sprintf("%s holding %d each", [nodes_phrase(shape.nodes), shape.workersPerNode])
] if {
	count([1 | some shape in gang.shapes; shape.nodes > 0]) > 0
} else := ["no node has room for a Worker"]

# unplaceable: a pod of the gang fits no node; the shape denial says so.
unplaceable if {
	some rj in capacity.replicatedJobs
	rj.role in {"launcher", "worker"}
	rj.pods > 0
	rj.fittingNodes == 0
}

# gang_capacity is the most Workers the nodes hold at once beside the
# Launcher (capacity.gang.capacity: every shape's nodes times the Workers one
# holds, less what the Launcher takes where it costs the fewest Workers),
# plus the Workers the nodes an autoscaler may add hold (nodeGroups).
gang_capacity := capacity.gang.capacity + sum([n | some group in params.nodeGroups; n := group_added(group)])

# group_added is the Workers the nodes a node group may still grow by hold:
# maxNodes less the nodes of the group there are, each holding as many as
# the group's best shape.
group_added(group) := max([0, group.maxNodes - there]) * best if {
	shapes := [shape | some shape in capacity.gang.shapes; in_group(shape, group)]
	count(shapes) > 0
	there := sum([shape.nodes | some shape in shapes])
	best := max([shape.workersPerNode | some shape in shapes])
} else := 0

in_group(shape, group) if {
	every k, v in group.matchLabels {
		shape.labels[k] == v
	}
}

field_of(rj) := "spec.trainer.resourcesPerNode" if rj.role == "worker"

field_of(rj) := "spec.runtimePatches" if rj.role != "worker"

role_name(rj) := "Worker" if rj.role == "worker"

role_name(rj) := "Launcher" if rj.role == "launcher"

role_name(rj) := sprintf("replicated job %q", [rj.name]) if rj.role == "other"

nodes_phrase(1) := "1 cluster node"

nodes_phrase(n) := sprintf("%d cluster nodes", [n]) if n != 1

asks(rj) := concat(" and ", [sprintf("%s %s", [s.asks, s.resource]) | some s in rj.short])

largest(rj) := concat(" and ", [sprintf("%s %s", [s.largest, s.resource]) | some s in rj.short])

all_requests(rj) := concat(", ", [sprintf("%s %s", [q, name]) | some name, q in rj.requests])
