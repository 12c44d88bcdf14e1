# aggregate-quota: the whole job (launcher + every worker + any other replicated
# job) must fit each ResourceQuota of the namespace, counting status.used plus
# what admitted-but-not-yet-running TrainJobs and in-flight submits reserve.
#
# Which replicated jobs a quota's scopes select (PriorityClass, Terminating,
# BestEffort, ...) is decided once in Go and arrives as quota.roles, so the
# scope rules live in one place and match the kube-apiserver's evaluator.
package mpiguard.policies.aggregate_quota

import data.mpiguard.lib

# checked: a new job that will start, or a suspended job being resumed (Kueue
# admits by flipping spec.suspend). A job created suspended is checked at resume.
checked if {
	lib.is_create
	not lib.suspended(input.trainJob)
}

checked if lib.resumed

deny contains lib.violation("spec.trainer", msg) if {
	checked
	some quota in input.quotas
	some res, hard in quota.hard
	key := lib.quota_key(res)
	need := needed(quota, key)
	need > 0
	free := (hard.milli - lib.milli(quota.used, res)) - lib.milli(quota.reserved, res)
	need > free
	msg := lib.msg_quota_exceeded(key, need, breakdown(quota, key), quota, hard, free, fixes(quota, key, free))
}

# A quota on a resource makes the apiserver reject pods with a container that
# does not declare it; the job would be admitted and then hang.
deny contains lib.violation("spec.trainer.resourcesPerNode", msg) if {
	checked
	some quota in input.quotas
	some res, _ in quota.hard
	key := lib.quota_key(res)
	key.kind != "pods"
	some rj in matched(quota)
	key.resource in missing(rj, key.kind)
	msg := lib.msg_quota_undeclared(quota, res, key, rj)
}

missing(rj, "requests") := object.get(rj.perPod, "missingRequests", [])

missing(rj, "limits") := object.get(rj.perPod, "missingLimits", [])

# matched lists the replicated jobs whose pods the quota's scopes select.
matched(quota) := [rj | some rj in input.job.replicatedJobs; rj.name in quota.roles]

# needed is what the job charges the quota for a key, in milli units.
needed(quota, key) := sum([m |
	some rj in matched(quota)
	m := lib.per_pod_milli(rj, key) * rj.pods
])

# breakdown explains the total: "launcher 0 + 3 workers x 4".
breakdown(quota, key) := concat(" + ", [part(rj, key) | some rj in matched(quota)])

part(rj, key) := sprintf("launcher %s", [lib.key_display(key, lib.per_pod_milli(rj, key))]) if {
	rj.role == "launcher"
	rj.pods == 1
}

part(rj, key) := sprintf("%d launchers x %s", [rj.pods, lib.key_display(key, lib.per_pod_milli(rj, key))]) if {
	rj.role == "launcher"
	rj.pods != 1
}

part(rj, key) := sprintf("%d workers x %s", [rj.pods, lib.key_display(key, lib.per_pod_milli(rj, key))]) if rj.role == "worker"

part(rj, key) := sprintf("%s %d x %s", [rj.name, rj.pods, lib.key_display(key, lib.per_pod_milli(rj, key))]) if rj.role == "other"

# workers is the worker replicated job when this quota selects it.
workers(quota) := rj if {
	some rj in matched(quota)
	rj.role == "worker"
}

# rest_milli is what everything but the workers charges the quota.
rest_milli(quota, key) := sum([m |
	some rj in matched(quota)
	rj.role != "worker"
	m := lib.per_pod_milli(rj, key) * rj.pods
])

# fixes lists the changes that would make the job fit, largest job first.
fixes(quota, key, free) := [f | some f in [fewer_workers(quota, key, free), smaller_workers(quota, key, free)]; f != ""]

# fewer_workers: how many workers fit with today's per-worker size.
fewer_workers(quota, key, free) := sprintf("workers to %d", [n]) if {
	rj := workers(quota)
	per := lib.per_pod_milli(rj, key)
	per > 0
	n := floor((free - rest_milli(quota, key)) / per)
	n >= 1
} else := ""

# smaller_workers: the per-worker amount that fits with today's worker count.
smaller_workers(quota, key, free) := sprintf("%s to %s", [lib.per_worker_label(key.resource), lib.display(key.resource, per)]) if {
	key.kind != "pods"
	rj := workers(quota)
	per := lib.whole_units(key.resource, floor((free - rest_milli(quota, key)) / rj.pods))
	per > 0
} else := ""
