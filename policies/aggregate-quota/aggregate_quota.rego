# aggregate-quota: the whole job (launcher + every worker + any other replicated
# job) must fit each ResourceQuota of the namespace, counting status.used plus
# what admitted-but-not-yet-running TrainJobs and in-flight submits reserve.
#
# Go supplies, per quota, the job's demand for each quota resource name: the
# pod quota evaluator's name mapping (requests.X, limits.X, cpu, pods, ...) and
# the quota's scopes (PriorityClass, Terminating, BestEffort, ...) are applied
# once there, for this job and for the reserved ones alike, and what the quota
# has free for it (demand.free: hard - status.used - reserved), with exact
# displays of every amount and the jobs that hold it (demand.heldBy). Rego
# decides. Amounts can exceed 64 bits: nothing here divides them except
# through lib.quotient, so no input makes the policy fail.
package mpiguard.policies.aggregate_quota

import data.mpiguard.lib

# checked: a new job that will start, or a suspended job being resumed (Kueue
# admits by flipping spec.suspend). A job created suspended is checked at resume.
checked if {
	lib.is_create
	not lib.suspended
}

checked if lib.resumed

deny contains lib.violation("spec.trainer", msg) if {
	checked
	some quota in input.quotas
	some demand in quota.demand
	demand.milli > demand.free
	demand.milli > 0
	msg := lib.msg_quota_exceeded(quota.name, demand, breakdown(demand), fixes(demand, demand.free))
}

# A quota on a resource makes the apiserver reject pods with a container that
# does not declare it; the job would be admitted and then hang.
deny contains lib.violation("spec.trainer.resourcesPerNode", lib.msg_quota_undeclared(quota.name, res, demand, part)) if {
	checked
	some quota in input.quotas
	some res, demand in quota.demand
	demand.undeclared # some part is: look for which only then
	some part in demand.parts
	part.undeclared
}

# breakdown explains the total: "launcher 0 + 3 workers x 4".
breakdown(demand) := concat(" + ", [describe(p) | some p in demand.parts])

describe(p) := sprintf("launcher %s", [p.perPodDisplay]) if {
	p.role == "launcher"
	p.pods == 1
}

describe(p) := sprintf("%d launchers x %s", [p.pods, p.perPodDisplay]) if {
	p.role == "launcher"
	p.pods != 1
}

describe(p) := sprintf("%d workers x %s", [p.pods, p.perPodDisplay]) if p.role == "worker"

describe(p) := sprintf("%s %d x %s", [p.name, p.pods, p.perPodDisplay]) if p.role == "other"

# workers is the worker part of the demand, when the quota selects workers.
workers(demand) := p if {
	some p in demand.parts
	p.role == "worker"
}

# rest is what everything but the workers demands.
rest(demand) := sum([m |
	some p in demand.parts
	p.role != "worker"
	m := p.perPodMilli * p.pods
])

# fixes lists the reductions that would make the job fit.
fixes(demand, free) := [f | some f in [fewer_workers(demand, free), smaller_workers(demand, free)]; f != ""]

# fewer_workers: how many workers fit with today's per-worker size. With
# runLauncherAsNode the launcher is a node too, so numNodes is workers + 1.
fewer_workers(demand, free) := workers_to(n) if {
	w := workers(demand)
	w.perPodMilli > 0
	n := lib.quotient(free - rest(demand), w.perPodMilli)
	n >= 1
} else := ""

workers_to(n) := sprintf("workers to %d (spec.trainer.numNodes %d)", [n, n + 1]) if input.job.runLauncherAsNode == true

workers_to(n) := sprintf("workers to %d", [n]) if not input.job.runLauncherAsNode == true

# smaller_workers: the per-worker amount that fits with today's worker count.
smaller_workers(demand, free) := sprintf("%s to %s", [lib.per_worker_label(demand.resource), lib.display(demand.resource, per)]) if {
	demand.kind != "pods"
	w := workers(demand)
	per := lib.whole_units(demand.resource, lib.quotient(free - rest(demand), w.pods))
	per > 0
} else := ""
