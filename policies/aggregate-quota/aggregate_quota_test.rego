package mpiguard.policies.aggregate_quota_test

import data.mpiguard.policies.aggregate_quota

qty(n) := {"value": n, "milli": n * 1000, "display": format_int(n, 10)}

gpu_job(workers, gpus) := {
	"mpi": true,
	"replicatedJobs": [
		{"name": "launcher", "role": "launcher", "pods": 1, "perPod": {"requests": {"cpu": qty(1)}, "limits": {}}},
		{"name": "node", "role": "worker", "pods": workers, "perPod": {"requests": {"cpu": qty(8), "nvidia.com/gpu": qty(gpus)}, "limits": {"nvidia.com/gpu": qty(gpus)}}},
	],
}

gpu_quota(hard, used, reserved) := {
	"name": "team-a",
	"roles": ["launcher", "node"],
	"hard": {"requests.nvidia.com/gpu": qty(hard)},
	"used": {"requests.nvidia.com/gpu": qty(used)},
	"reserved": {"requests.nvidia.com/gpu": qty(reserved)},
}

create_input(job, quotas) := {
	"request": {"operation": "CREATE"},
	"trainJob": {"name": "train", "namespace": "team-a"},
	"job": job,
	"quotas": quotas,
}

test_over_quota_message if {
	got := aggregate_quota.deny with input as create_input(gpu_job(3, 4), [gpu_quota(16, 12, 0)])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 12 nvidia.com/gpu (launcher 0 + 3 workers x 4) but ResourceQuota "team-a" has 4 of 16 free; reduce workers to 1 or GPUs per worker to 1, or ask an admin to raise the quota`,
	}}
}

test_exact_fit_allowed if {
	count(aggregate_quota.deny) == 0 with input as create_input(gpu_job(3, 4), [gpu_quota(16, 4, 0)])
}

test_reserved_counts if {
	count(aggregate_quota.deny) == 1 with input as create_input(gpu_job(3, 4), [gpu_quota(16, 4, 1)])
}

test_quota_not_selecting_job_ignored if {
	quota := object.union(gpu_quota(16, 16, 0), {"roles": []})
	count(aggregate_quota.deny) == 0 with input as create_input(gpu_job(3, 4), [quota])
}

test_created_suspended_not_checked if {
	inp := object.union(create_input(gpu_job(3, 4), [gpu_quota(16, 16, 0)]), {"trainJob": {"suspend": true}})
	count(aggregate_quota.deny) == 0 with input as inp
}

test_resume_checked if {
	inp := object.union(create_input(gpu_job(3, 4), [gpu_quota(16, 16, 0)]), {
		"request": {"operation": "UPDATE"},
		"oldTrainJob": {"suspend": true},
		"trainJob": {"suspend": false},
	})
	count(aggregate_quota.deny) == 1 with input as inp
}

test_update_without_resume_not_checked if {
	inp := object.union(create_input(gpu_job(3, 4), [gpu_quota(16, 16, 0)]), {
		"request": {"operation": "UPDATE"},
		"oldTrainJob": {"suspend": false},
	})
	count(aggregate_quota.deny) == 0 with input as inp
}

test_no_fix_when_launcher_alone_too_big if {
	quota := {
		"name": "small", "roles": ["launcher", "node"],
		"hard": {"requests.cpu": qty(4)}, "used": {}, "reserved": {},
	}
	got := aggregate_quota.deny with input as create_input(gpu_job(2, 1), [quota])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 17 cpu (launcher 1 + 2 workers x 8) but ResourceQuota "small" has 4 of 4 free; reduce CPUs per worker to 1500m, or ask an admin to raise the quota`,
	}}
}

test_pods_and_memory_messages if {
	job := {"mpi": true, "replicatedJobs": [
		{"name": "launcher", "role": "launcher", "pods": 1, "perPod": {"requests": {"memory": {"value": 1073741824, "milli": 1073741824000, "display": "1Gi"}}, "limits": {}}},
		{"name": "node", "role": "worker", "pods": 4, "perPod": {"requests": {"memory": {"value": 17179869184, "milli": 17179869184000, "display": "16Gi"}}, "limits": {}}},
	]}
	quota := {
		"name": "team-a", "roles": ["launcher", "node"],
		"hard": {"pods": qty(4), "requests.memory": {"value": 34359738368, "milli": 34359738368000, "display": "32Gi"}},
		"used": {"pods": qty(1)}, "reserved": {},
	}
	got := aggregate_quota.deny with input as create_input(job, [quota])
	got == {
		{"field": "spec.trainer", "msg": `TrainJob needs 5 pods (launcher 1 + 4 workers x 1) but ResourceQuota "team-a" has 3 of 4 free; reduce workers to 2, or ask an admin to raise the quota`},
		{"field": "spec.trainer", "msg": `TrainJob needs 65Gi memory (launcher 1Gi + 4 workers x 16Gi) but ResourceQuota "team-a" has 32Gi of 32Gi free; reduce workers to 1 or memory per worker to 7936Mi, or ask an admin to raise the quota`},
	}
}

test_undeclared_request_denied if {
	job := {"mpi": true, "replicatedJobs": [{
		"name": "launcher", "role": "launcher", "pods": 1,
		"perPod": {"requests": {}, "limits": {}, "missingRequests": ["cpu"]},
	}]}
	quota := {"name": "team-a", "roles": ["launcher"], "hard": {"requests.cpu": qty(100)}, "used": {}, "reserved": {}}
	got := aggregate_quota.deny with input as create_input(job, [quota])
	got == {{
		"field": "spec.trainer.resourcesPerNode",
		"msg": `ResourceQuota "team-a" limits requests.cpu, so every container must declare a cpu request, but the launcher pods have a container without one; set resources.requests.cpu on every container of replicated job "launcher", or ask an admin to add a LimitRange default`,
	}}
}
