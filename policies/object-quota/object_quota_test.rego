package mpiguard.policies.object_quota_test

import data.mpiguard.policies.object_quota

jobs := {"kind": "Job", "group": "batch", "resource": "jobs.batch", "quotaName": "count/jobs.batch", "creator": "JobSet", "names": ["resnet-node-0"], "count": 1, "existing": 0, "charged": 1}

created := [
	object.union(jobs, {"replicatedJob": "node"}),
	object.union(jobs, {"replicatedJob": "launcher", "names": ["resnet-launcher-0"]}),
	{"kind": "ConfigMap", "group": "", "resource": "configmaps", "quotaName": "count/configmaps", "creator": "Trainer", "replicatedJob": "", "names": ["resnet-runtime-snapshot"], "count": 1, "existing": 0, "charged": 1},
	{"kind": "ConfigMap", "group": "", "resource": "configmaps", "quotaName": "count/configmaps", "creator": "Trainer", "replicatedJob": "", "names": ["resnet-mpi-hostfile"], "count": 1, "existing": 1, "charged": 0},
]

quota(name, idx, need, hard, used, held, held_by) := {
	"quota": "team-a", "name": name, "counts": name, "created": idx,
	"milli": need, "display": format_int(need / 1000, 10),
	"hard": hard, "hardDisplay": format_int(hard / 1000, 10),
	"used": used, "usedDisplay": format_int(used / 1000, 10),
	"held": held, "heldDisplay": format_int(held / 1000, 10), "heldBy": held_by,
}

input_for(q) := {
	"request": {"operation": "CREATE"},
	"trainJob": {"namespace": "team-a", "suspend": false},
	"job": {"objects": {"created": created, "quotas": [q]}},
}

test_two_jobs_over_a_count_of_one if {
	v := object_quota.deny with input as input_for(quota("count/jobs.batch", [0, 1], 2000, 1000, 0, 0, []))
	v == {{"field": "spec.runtimeRef", "msg": `TrainJob creates 2 Jobs counted by count/jobs.batch (the JobSet controller creates one Job per replica of each replicated job: node 1, launcher 1) but ResourceQuota "team-a" has 1 of 1 free; ask an admin to raise count/jobs.batch in ResourceQuota "team-a" to at least 2, or delete Jobs namespace team-a no longer needs`}}
}

test_an_existing_configmap_is_not_named if {
	v := object_quota.deny with input as input_for(quota("configmaps", [2, 3], 1000, 10000, 10000, 0, []))
	v == {{"field": "spec.runtimeRef", "msg": `TrainJob creates 1 ConfigMap counted by configmaps (the Trainer creates resnet-runtime-snapshot) but ResourceQuota "team-a" has 0 of 10 free; ask an admin to raise configmaps in ResourceQuota "team-a" to at least 11, or delete ConfigMaps namespace team-a no longer needs`}}
}

test_held_by_admitted_jobs if {
	v := object_quota.deny with input as input_for(quota("count/jobs.batch", [0, 1], 2000, 3000, 0, 2000, [{"trainJob": "team-a/first", "milli": 2000, "display": "2"}]))
	some violation in v
	contains(violation.msg, `has 1 of 3 free (0 exist, 2 held by TrainJobs admitted whose objects do not exist yet: team-a/first 2)`)
}

test_fits if {
	count(object_quota.deny) == 0 with input as input_for(quota("count/jobs.batch", [0, 1], 2000, 2000, 0, 0, []))
}

test_nothing_to_create if {
	count(object_quota.deny) == 0 with input as input_for(quota("count/configmaps", [3], 0, 1000, 1000, 0, []))
}

test_a_suspended_create_is_judged_at_resume if {
	suspended := object.union(input_for(quota("count/jobs.batch", [0, 1], 2000, 1000, 0, 0, [])), {"trainJob": {"namespace": "team-a", "suspend": true}})
	count(object_quota.deny) == 0 with input as suspended
	resume := object.union(suspended, {"request": {"operation": "UPDATE"}, "trainJob": {"namespace": "team-a", "suspend": false}, "oldTrainJob": {"suspend": true}})
	count(object_quota.deny) == 1 with input as resume
}

test_more_than_three_holders if {
	held_by := [{"trainJob": sprintf("team-a/j%d", [i]), "milli": 1000, "display": "1"} | some i in numbers.range(1, 5)]
	v := object_quota.deny with input as input_for(quota("count/jobs.batch", [0, 1], 2000, 6000, 0, 5000, held_by))
	some violation in v
	contains(violation.msg, `team-a/j1 1, team-a/j2 1, team-a/j3 1 and 2 more)`)
}
