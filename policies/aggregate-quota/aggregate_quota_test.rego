package mpiguard.policies.aggregate_quota_test

import data.mpiguard.lib
import data.mpiguard.policies.aggregate_quota

qty(n) := {"value": n, "milli": n * 1000, "display": format_int(n, 10)}

# part is one replicated job's share of a quota demand, in whole units.
part(name, role, pods, per) := {"name": name, "role": role, "pods": pods, "perPodMilli": per * 1000, "undeclared": false}

# demand is what Go puts in quota.demand for a resource, with the displays Go
# supplies; nothing held until held_by says so.
demand(kind, res, parts) := {
	"kind": kind, "resource": res,
	"parts": [object.union(p, {"perPodDisplay": lib.display(res, p.perPodMilli)}) | some p in parts],
	"milli": total, "display": lib.display(res, total),
	"undeclared": count([p | some p in parts; p.undeclared]) > 0,
	"held": 0, "heldDisplay": "0", "heldBy": [],
} if {
	total := sum([m | some p in parts; m := p.pods * p.perPodMilli])
}

# limited adds the quota's amounts Go supplies with the demand (milli
# amounts): its hard limit and status.used, with their displays.
limited(d, hard, used) := object.union(d, {
	"hard": hard, "hardDisplay": lib.display(d.resource, hard),
	"used": used, "usedDisplay": lib.display(d.resource, used),
})

# holding adds what reserved jobs hold of the quota (milli), without naming them.
holding(d, held) := object.union(d, {"held": held, "heldDisplay": lib.display(d.resource, held)})

# held_by adds the admitted jobs that hold the quota resource: [[name, milli], ...], largest first.
held_by(d, holders) := object.union(d, {
	"held": held, "heldDisplay": lib.display(d.resource, held),
	"heldBy": [{"trainJob": h[0], "milli": h[1], "display": lib.display(d.resource, h[1])} | some h in holders],
}) if {
	held := sum([h[1] | some h in holders])
}

gpu_demand(workers, gpus) := demand("requests", "nvidia.com/gpu", [part("launcher", "launcher", 1, 0), part("node", "worker", workers, gpus)])

gpu_quota(d, hard, used, reserved) := {
	"name": "team-a",
	"hard": {"requests.nvidia.com/gpu": qty(hard)},
	"used": {"requests.nvidia.com/gpu": qty(used)},
	"reserved": {"requests.nvidia.com/gpu": qty(reserved)},
	"demand": {"requests.nvidia.com/gpu": limited(holding(d, reserved * 1000), hard * 1000, used * 1000)},
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
	quota := {"name": "small", "hard": {"requests.cpu": qty(4)}, "used": {}, "reserved": {}, "demand": {"requests.cpu": limited(d, 4000, 0)}}
	got := aggregate_quota.deny with input as create_input([quota])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 17 cpu (launcher 1 + 2 workers x 8) but ResourceQuota "small" has 4 of 4 free; reduce CPUs per worker to 1500m, or ask an admin to raise the quota`,
	}}
}

test_no_fix_when_launcher_alone_too_big if {
	d := demand("requests", "cpu", [part("launcher", "launcher", 1, 8), part("node", "worker", 2, 8)])
	quota := {"name": "small", "hard": {"requests.cpu": qty(4)}, "used": {}, "reserved": {}, "demand": {"requests.cpu": limited(d, 4000, 0)}}
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
		"demand": {"pods": limited(pods, 4000, 1000), "limits.memory": limited(memory, (32 * gi) * 1000, 0)},
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
	quota := {"name": "team-a", "hard": {"requests.cpu": qty(100)}, "used": {}, "reserved": {}, "demand": {"requests.cpu": limited(d, 100000, 0)}}
	got := aggregate_quota.deny with input as object.union(create_input([quota]), {"runtime": {"kind": "ClusterTrainingRuntime", "name": "openmpi"}})
	got == {{
		"field": "spec.runtimeRef",
		"msg": `ResourceQuota "team-a" limits requests.cpu, so the apiserver refuses a pod with a container that does not declare each, and the Launcher pods have such a container; this comes from ClusterTrainingRuntime "openmpi" (the TrainJob has no runtime patches of its own): ask a cluster admin to set requests.cpu on every container there, or override it for this TrainJob with spec.runtimePatches, or ask an admin to add a LimitRange default`,
	}}
}

# A quota on cpu and memory that the Launcher and the Workers leave
# undeclared (the Trainer's examples set no resources): one denial, which
# leads with spec.trainer.resourcesPerNode, not one per resource and pod.
test_undeclared_requests_collapse_to_one_line if {
	launcher_part := object.union(part("launcher", "launcher", 1, 0), {"undeclared": true})
	worker_part := object.union(part("node", "worker", 2, 0), {"undeclared": true})
	cpu := limited(demand("requests", "cpu", [launcher_part, worker_part]), 100000, 0)
	memory := limited(demand("requests", "memory", [launcher_part, worker_part]), 100000, 0)
	quota := {"name": "team-a", "hard": {}, "used": {}, "reserved": {}, "demand": {"requests.cpu": cpu, "requests.memory": memory}}
	got := aggregate_quota.deny with input as object.union(create_input([quota]), {"runtime": {"kind": "ClusterTrainingRuntime", "name": "openmpi"}})
	got == {{
		"field": "spec.trainer.resourcesPerNode",
		"msg": `ResourceQuota "team-a" limits requests.cpu, requests.memory, so the apiserver refuses a pod with a container that does not declare each, and the Launcher and Worker pods have such a container; set requests.cpu, requests.memory in spec.trainer.resourcesPerNode (the training container of every Worker); for the Launcher pods, this comes from ClusterTrainingRuntime "openmpi" (the TrainJob has no runtime patches of its own): ask a cluster admin to declare them on every container there, or override it for this TrainJob with spec.runtimePatches, or ask an admin to add a LimitRange default`,
	}}
}

# With runLauncherAsNode the Launcher takes resourcesPerNode too: the fix is
# that field alone, for both.
test_undeclared_launcher_as_node_fixed_by_resources_per_node if {
	launcher_part := object.union(part("launcher", "launcher", 1, 0), {"undeclared": true})
	worker_part := object.union(part("node", "worker", 3, 0), {"undeclared": true})
	cpu := limited(demand("requests", "cpu", [launcher_part, worker_part]), 100000, 0)
	quota := {"name": "team-a", "hard": {}, "used": {}, "reserved": {}, "demand": {"requests.cpu": cpu}}
	inp := object.union(create_input([quota]), {"job": {"runLauncherAsNode": true}, "runtime": {"kind": "ClusterTrainingRuntime", "name": "mpiguard-openmpi"}})
	got := aggregate_quota.deny with input as inp
	got == {{
		"field": "spec.trainer.resourcesPerNode",
		"msg": `ResourceQuota "team-a" limits requests.cpu, so the apiserver refuses a pod with a container that does not declare each, and the Launcher and Worker pods have such a container; set requests.cpu in spec.trainer.resourcesPerNode (the training container of every Worker and of the Launcher, which runs as a node), or ask an admin to add a LimitRange default`,
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

# Amounts past 64 bits: the job's total, what is free and the fixes are exact,
# and the policy never fails on them.
ti := 1099511627776

pi := 1125899906842624

memory_quota(d, hard) := {
	"name": "team-a",
	"hard": {"requests.memory": {"value": hard, "milli": hard * 1000, "display": lib.display("memory", hard * 1000)}},
	"used": {}, "reserved": {},
	"demand": {"requests.memory": limited(d, hard * 1000, 0)},
}

test_thousands_of_workers_times_terabytes_denied if {
	d := demand("requests", "memory", [part("launcher", "launcher", 1, 1073741824), part("node", "worker", 5000, 4 * ti)])
	got := aggregate_quota.deny with input as create_input([memory_quota(d, pi)])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 20480001Gi memory (launcher 1Gi + 5000 workers x 4Ti) but ResourceQuota "team-a" has 1Pi of 1Pi free; reduce workers to 255 or memory per worker to 225179766620, or ask an admin to raise the quota`,
	}}
}

test_petabytes_per_worker_denied if {
	d := demand("requests", "memory", [part("launcher", "launcher", 1, 0), part("node", "worker", 2, 8 * pi)])
	got := aggregate_quota.deny with input as create_input([memory_quota(d, pi)])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 16Pi memory (launcher 0 + 2 workers x 8Pi) but ResourceQuota "team-a" has 1Pi of 1Pi free; reduce memory per worker to 512Ti, or ask an admin to raise the quota`,
	}}
}

test_exact_fit_at_huge_sizes_allowed if {
	d := demand("requests", "memory", [part("launcher", "launcher", 1, 0), part("node", "worker", 5000, 4 * ti)])
	count(aggregate_quota.deny) == 0 with input as create_input([memory_quota(d, 20000 * ti)])
}

test_one_byte_over_at_huge_sizes_denied if {
	d := demand("requests", "memory", [part("launcher", "launcher", 1, 1), part("node", "worker", 5000, 4 * ti)])
	got := aggregate_quota.deny with input as create_input([memory_quota(d, 20000 * ti)])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 21990232555520001 memory (launcher 1 + 5000 workers x 4Ti) but ResourceQuota "team-a" has 20000Ti of 20000Ti free; reduce workers to 4999 or memory per worker to 4398046511103, or ask an admin to raise the quota`,
	}}
}

# A worker part without pods leaves nothing to divide by: the fixes are
# skipped instead of failing the policy.
test_no_workers_no_division if {
	d := demand("requests", "cpu", [part("launcher", "launcher", 1, 8), part("node", "worker", 0, 8)])
	quota := {"name": "small", "hard": {"requests.cpu": qty(4)}, "used": {}, "reserved": {}, "demand": {"requests.cpu": limited(d, 4000, 0)}}
	got := aggregate_quota.deny with input as create_input([quota])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 8 cpu (launcher 8 + 0 workers x 8) but ResourceQuota "small" has 4 of 4 free; ask an admin to raise the quota`,
	}}
}

# When admitted jobs whose pods do not exist yet hold the quota, the denial
# names them: status.used alone would not explain what is free.
test_held_by_named if {
	d := held_by(gpu_demand(3, 4), [["team-a/job-1", 4000], ["team-a/job-2", 4000]])
	quota := gpu_quota(d, 16, 8, 8)
	got := aggregate_quota.deny with input as create_input([quota])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 12 nvidia.com/gpu (launcher 0 + 3 workers x 4) but ResourceQuota "team-a" has 0 of 16 free (8 used by running pods, 8 held by TrainJobs admitted whose pods do not exist yet: team-a/job-1 4, team-a/job-2 4); ask an admin to raise the quota`,
	}}
}

# A quota whose controller missed pods that exist: mpiguard counts them in
# used (Go adds them), and the message says how much of used the quota's
# own status does not show, so kubectl's smaller number is explained.
test_used_not_yet_in_status_is_named if {
	d := object.union(gpu_demand(3, 4), {"uncounted": 8000, "uncountedDisplay": "8"})
	quota := gpu_quota(d, 16, 8, 0)
	got := aggregate_quota.deny with input as create_input([quota])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 12 nvidia.com/gpu (launcher 0 + 3 workers x 4) but ResourceQuota "team-a" has 8 of 16 free (8 used by running pods, 8 of them not yet in its status.used (its controller missed pods created meanwhile)); reduce workers to 2 or GPUs per worker to 2, or ask an admin to raise the quota`,
	}}
}

test_used_not_yet_in_status_and_held if {
	d := object.union(held_by(gpu_demand(3, 4), [["team-a/job-1", 4000]]), {"uncounted": 4000, "uncountedDisplay": "4"})
	quota := gpu_quota(d, 16, 8, 4)
	got := aggregate_quota.deny with input as create_input([quota])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 12 nvidia.com/gpu (launcher 0 + 3 workers x 4) but ResourceQuota "team-a" has 4 of 16 free (8 used by running pods, 4 of them not yet in its status.used (its controller missed pods created meanwhile), 4 held by TrainJobs admitted whose pods do not exist yet: team-a/job-1 4); reduce workers to 1 or GPUs per worker to 1, or ask an admin to raise the quota`,
	}}
}

test_held_by_names_three_and_counts_the_rest if {
	d := held_by(gpu_demand(3, 4), [["team-a/a", 4000], ["team-a/b", 2000], ["team-a/c", 1000], ["team-a/d", 1000], ["team-a/e", 1000]])
	quota := gpu_quota(d, 16, 0, 9)
	got := aggregate_quota.deny with input as create_input([quota])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 12 nvidia.com/gpu (launcher 0 + 3 workers x 4) but ResourceQuota "team-a" has 7 of 16 free (0 used by running pods, 9 held by TrainJobs admitted whose pods do not exist yet: team-a/a 4, team-a/b 2, team-a/c 1 and 2 more); reduce workers to 1 or GPUs per worker to 2, or ask an admin to raise the quota`,
	}}
}

# What is free is computed here from the amounts Go supplies: hard - used -
# held. An over-committed quota (used and held above hard) has nothing free.
test_free_is_hard_less_used_less_held if {
	count(aggregate_quota.deny) == 0 with input as create_input([gpu_quota(gpu_demand(3, 4), 20, 4, 4)])
	count(aggregate_quota.deny) == 1 with input as create_input([gpu_quota(gpu_demand(3, 4), 20, 4, 5)])
	count(aggregate_quota.deny) == 1 with input as create_input([gpu_quota(gpu_demand(3, 4), 20, 5, 4)])
	got := aggregate_quota.deny with input as create_input([gpu_quota(gpu_demand(3, 4), 16, 12, 8)])
	got == {{
		"field": "spec.trainer",
		"msg": `TrainJob needs 12 nvidia.com/gpu (launcher 0 + 3 workers x 4) but ResourceQuota "team-a" has 0 of 16 free; ask an admin to raise the quota`,
	}}
}

test_demand_labels if {
	aggregate_quota.demand_label({"kind": "pods"}) == "pods"
	aggregate_quota.demand_label({"kind": "requests", "resource": "nvidia.com/gpu"}) == "nvidia.com/gpu"
	aggregate_quota.demand_label({"kind": "limits", "resource": "memory"}) == "memory limits"
}

test_fix_text if {
	aggregate_quota.fix_text(["workers to 1", "GPUs per worker to 1"], "ask an admin") == "reduce workers to 1 or GPUs per worker to 1, or ask an admin"
	aggregate_quota.fix_text([], "ask an admin") == "ask an admin"
}

# One Worker is "1 worker", never "1 workers".
test_one_worker_counted_in_the_singular if {
	got := aggregate_quota.deny with input as create_input([gpu_quota(gpu_demand(1, 8), 16, 12, 0)])
	some v in got
	contains(v.msg, "(launcher 0 + 1 worker x 8)")
}
