package mpiguard.policies.aggregate_quota_test

import data.mpiguard.policies.aggregate_quota

qty(n) := {"value": n, "milli": n * 1000, "display": format_int(n, 10)}

# part is one replicated job's share of a quota demand, in whole units.
part(name, role, pods, per) := {"name": name, "role": role, "pods": pods, "perPodMilli": per * 1000, "undeclared": false}

demand(kind, res, parts) := {
	"kind": kind, "resource": res, "parts": parts,
	"milli": sum([m | some p in parts; m := p.pods * p.perPodMilli]),
	"undeclared": count([p | some p in parts; p.undeclared]) > 0,
}

gpu_demand(workers, gpus) := demand("requests", "nvidia.com/gpu", [part("launcher", "launcher", 1, 0), part("node", "worker", workers, gpus)])

# free is what Go puts in demand.free: hard - used - reserved, in milli.
free(d, milli) := object.union(d, {"free": milli})

gpu_quota(d, hard, used, reserved) := {
	"name": "team-a",
	"hard": {"requests.nvidia.com/gpu": qty(hard)},
	"used": {"requests.nvidia.com/gpu": qty(used)},
	"reserved": {"requests.nvidia.com/gpu": qty(reserved)},
	"demand": {"requests.nvidia.com/gpu": free(d, ((hard - used) - reserved) * 1000)},
}

create_input(quotas) := {
	"request": {"operation": "CREATE"},
	"trainJob": {"name": "train", "namespace": "team-a"},
	"job": {"mpi": true},
	"quotas": quotas,
}

test_over_quota_message if {
	got := aggregate_quota.deny with input as create_input([gpu_quota(gpu_demand(3, 4), 16, 12, 0)])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 12 nvidia.com/gpu (launcher 0 + 3 workers x 4) but ResourceQuota "team-a" has 4 of 16 free; reduce workers to 1 or GPUs per worker to 1, or ask an admin to raise the quota`,
	}}
}

test_exact_fit_allowed if {
	count(aggregate_quota.deny) == 0 with input as create_input([gpu_quota(gpu_demand(3, 4), 16, 4, 0)])
}

test_reserved_counts if {
	count(aggregate_quota.deny) == 1 with input as create_input([gpu_quota(gpu_demand(3, 4), 16, 4, 1)])
}

test_quota_not_selecting_job_ignored if {
	count(aggregate_quota.deny) == 0 with input as create_input([gpu_quota(demand("requests", "nvidia.com/gpu", []), 16, 16, 0)])
}

test_created_suspended_not_checked if {
	inp := object.union(create_input([gpu_quota(gpu_demand(3, 4), 16, 16, 0)]), {"trainJob": {"suspend": true}})
	count(aggregate_quota.deny) == 0 with input as inp
}

test_resume_checked if {
	inp := object.union(create_input([gpu_quota(gpu_demand(3, 4), 16, 16, 0)]), {
		"request": {"operation": "UPDATE"},
		"oldTrainJob": {"suspend": true},
		"trainJob": {"suspend": false},
	})
	count(aggregate_quota.deny) == 1 with input as inp
}

test_update_without_resume_not_checked if {
	inp := object.union(create_input([gpu_quota(gpu_demand(3, 4), 16, 16, 0)]), {
		"request": {"operation": "UPDATE"},
		"oldTrainJob": {"suspend": false},
	})
	count(aggregate_quota.deny) == 0 with input as inp
}

test_only_smaller_workers_when_launcher_takes_most if {
	d := demand("requests", "cpu", [part("launcher", "launcher", 1, 1), part("node", "worker", 2, 8)])
	quota := {"name": "small", "hard": {"requests.cpu": qty(4)}, "used": {}, "reserved": {}, "demand": {"requests.cpu": free(d, 4000)}}
	got := aggregate_quota.deny with input as create_input([quota])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 17 cpu (launcher 1 + 2 workers x 8) but ResourceQuota "small" has 4 of 4 free; reduce CPUs per worker to 1500m, or ask an admin to raise the quota`,
	}}
}

test_no_fix_when_launcher_alone_too_big if {
	d := demand("requests", "cpu", [part("launcher", "launcher", 1, 8), part("node", "worker", 2, 8)])
	quota := {"name": "small", "hard": {"requests.cpu": qty(4)}, "used": {}, "reserved": {}, "demand": {"requests.cpu": free(d, 4000)}}
	got := aggregate_quota.deny with input as create_input([quota])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 24 cpu (launcher 8 + 2 workers x 8) but ResourceQuota "small" has 4 of 4 free; ask an admin to raise the quota`,
	}}
}

test_pods_and_memory_messages if {
	gi := 1073741824
	pods := demand("pods", "", [part("launcher", "launcher", 1, 1), part("node", "worker", 4, 1)])
	memory := demand("limits", "memory", [part("launcher", "launcher", 1, gi), part("node", "worker", 4, 16 * gi)])
	quota := {
		"name": "team-a",
		"hard": {"pods": qty(4), "limits.memory": {"value": 32 * gi, "milli": (32 * gi) * 1000, "display": "32Gi"}},
		"used": {"pods": qty(1)}, "reserved": {},
		"demand": {"pods": free(pods, 3000), "limits.memory": free(memory, (32 * gi) * 1000)},
	}
	got := aggregate_quota.deny with input as create_input([quota])
	got == {
		{"field": "spec.trainer", "msg": `TrainJob needs 5 pods (launcher 1 + 4 workers x 1) but ResourceQuota "team-a" has 3 of 4 free; reduce workers to 2, or ask an admin to raise the quota`},
		{"field": "spec.trainer", "msg": `TrainJob needs 65Gi memory limits (launcher 1Gi + 4 workers x 16Gi) but ResourceQuota "team-a" has 32Gi of 32Gi free; reduce workers to 1 or memory per worker to 7936Mi, or ask an admin to raise the quota`},
	}
}

test_other_replicated_jobs_in_breakdown if {
	d := demand("requests", "nvidia.com/gpu", [part("launcher", "launcher", 2, 0), part("node", "worker", 2, 4), part("initializer", "other", 1, 1)])
	quota := gpu_quota(d, 8, 0, 0)
	got := aggregate_quota.deny with input as create_input([quota])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 9 nvidia.com/gpu (2 launchers x 0 + 2 workers x 4 + initializer 1 x 1) but ResourceQuota "team-a" has 8 of 8 free; reduce workers to 1 or GPUs per worker to 3, or ask an admin to raise the quota`,
	}}
}

test_undeclared_request_denied if {
	d := demand("requests", "cpu", [object.union(part("launcher", "launcher", 1, 0), {"undeclared": true})])
	quota := {"name": "team-a", "hard": {"requests.cpu": qty(100)}, "used": {}, "reserved": {}, "demand": {"requests.cpu": free(d, 100000)}}
	got := aggregate_quota.deny with input as create_input([quota])
	got == {{
		"field": "spec.trainer.resourcesPerNode",
		"msg": `ResourceQuota "team-a" limits requests.cpu, so every container must declare a cpu request, but the launcher pods have a container without one; set resources.requests.cpu on every container of replicated job "launcher", or ask an admin to add a LimitRange default`,
	}}
}

test_launcher_as_node_names_num_nodes if {
	inp := object.union(create_input([gpu_quota(gpu_demand(3, 4), 16, 12, 0)]), {"job": {"runLauncherAsNode": true}})
	got := aggregate_quota.deny with input as inp
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 12 nvidia.com/gpu (launcher 0 + 3 workers x 4) but ResourceQuota "team-a" has 4 of 16 free; reduce workers to 1 (spec.trainer.numNodes 2) or GPUs per worker to 1, or ask an admin to raise the quota`,
	}}
}
