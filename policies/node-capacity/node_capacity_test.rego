package mpiguard.policies.node_capacity_test

import data.mpiguard.policies.node_capacity

params := {"shapeEnforcement": "deny", "gangEnforcement": "warn", "nodeGroups": []}

# doc is a CREATE of an MPI job whose capacity facts are capacity.
doc(capacity) := {
	"request": {"operation": "CREATE"},
	"trainJob": {"suspend": false},
	"job": {"mpi": true},
	"capacity": capacity,
	"parameters": {"node-capacity": params},
}

with_params(d, p) := object.union(d, {"parameters": {"node-capacity": object.union(params, p)}})

launcher := {"name": "launcher", "role": "launcher", "pods": 1, "requests": {"cpu": "1"}, "eligibleNodes": 4, "excluded": {"selector": 0, "taints": 0, "unschedulable": 0}, "fittingNodes": 4, "short": []}

worker(fitting, short) := {"name": "node", "role": "worker", "pods": 6, "requests": {"cpu": "8", "nvidia.com/gpu": "16"}, "eligibleNodes": 4, "excluded": {"selector": 4, "taints": 0, "unschedulable": 0}, "fittingNodes": fitting, "short": short}

# 4 eligible GPU nodes holding 1 Worker each; the Launcher fits beside one.
gang(workers) := {"workers": workers, "launcher": true, "capacity": 4, "shapes": [{"nodes": 4, "labels": {"pool": "gpu"}, "workersPerNode": 1, "launcherCost": 0}]}

test_worker_larger_than_every_node_denied_with_numbers if {
	got := node_capacity.deny with input as doc({"nodes": 8, "replicatedJobs": [launcher, worker(0, [{"resource": "nvidia.com/gpu", "asks": "16", "largest": "8"}])], "gang": gang(6)})
	got == {{
		"field": "spec.trainer.resourcesPerNode",
		"msg": "each Worker pod asks 16 nvidia.com/gpu; the largest of the 4 cluster nodes it may run on has 8 nvidia.com/gpu, so no node can ever hold it and the job would wait with its pods Pending; ask for at most what the largest node has, or select nodes large enough (nodeSelector, node affinity)",
	}}
}

test_too_large_shape_only_warns_when_set_to_warn if {
	d := with_params(doc({"nodes": 8, "replicatedJobs": [launcher, worker(0, [{"resource": "nvidia.com/gpu", "asks": "16", "largest": "8"}])], "gang": gang(6)}), {"shapeEnforcement": "warn"})
	count(node_capacity.deny) == 0 with input as d
	count(node_capacity.warn) == 1 with input as d
}

test_no_eligible_node_denied_with_reasons if {
	rj := object.union(worker(0, []), {"eligibleNodes": 0, "excluded": {"selector": 5, "taints": 2, "unschedulable": 1}})
	got := node_capacity.deny with input as doc({"nodes": 8, "replicatedJobs": [launcher, rj], "gang": gang(6)})
	some v in got
	v.msg == "no node may run the Worker pods: of 8 cluster nodes, 5 do not match its node selector or required node affinity, 2 have taints it does not tolerate, 1 are cordoned (spec.unschedulable), so the job would wait with its pods Pending; select nodes that exist (nodeSelector, node affinity) or tolerate their taints"
}

test_gang_larger_than_nodes_warns_by_default if {
	d := doc({"nodes": 8, "replicatedJobs": [launcher, worker(4, [])], "gang": gang(6)})
	count(node_capacity.deny) == 0 with input as d
	node_capacity.warn == {{
		"field": "spec.trainer.numNodes",
		"msg": "the 6 Workers and the Launcher cannot all run at once: the nodes they may run on hold at most 4 Workers beside the Launcher (4 cluster nodes holding 1 each), so the job would hold its quota and wait with pods Pending until the cluster grows; use at most 4 Workers (spec.trainer.numNodes), or ask an admin for nodes (a cluster autoscaler's node groups are named in the node-capacity parameter nodeGroups)",
	}} with input as d
}

test_gang_denied_with_parameter if {
	d := with_params(doc({"nodes": 8, "replicatedJobs": [launcher, worker(4, [])], "gang": gang(6)}), {"gangEnforcement": "deny"})
	count(node_capacity.deny) == 1 with input as d
	count(node_capacity.warn) == 0 with input as d
}

test_gang_that_fits_is_quiet if {
	d := doc({"nodes": 8, "replicatedJobs": [launcher, worker(4, [])], "gang": gang(4)})
	count(node_capacity.deny) == 0 with input as d
	count(node_capacity.warn) == 0 with input as d
}

test_launcher_cost_counts if {
	g := {"workers": 4, "launcher": true, "capacity": 3, "shapes": [{"nodes": 4, "labels": {}, "workersPerNode": 1, "launcherCost": 1}]}
	count(node_capacity.warn) == 1 with input as doc({"nodes": 4, "replicatedJobs": [launcher, worker(4, [])], "gang": g})
}

test_autoscaler_node_group_counts_its_maximum if {
	d := with_params(doc({"nodes": 8, "replicatedJobs": [launcher, worker(4, [])], "gang": gang(6)}), {
		"gangEnforcement": "deny",
		"nodeGroups": [{"name": "gpu", "matchLabels": {"pool": "gpu"}, "maxNodes": 6}],
	})
	count(node_capacity.deny) == 0 with input as d
	count(node_capacity.warn) == 0 with input as d
}

test_node_group_of_other_labels_adds_nothing if {
	d := with_params(doc({"nodes": 8, "replicatedJobs": [launcher, worker(4, [])], "gang": gang(6)}), {
		"gangEnforcement": "deny",
		"nodeGroups": [{"name": "cpu", "matchLabels": {"pool": "cpu"}, "maxNodes": 100}],
	})
	count(node_capacity.deny) == 1 with input as d
}

test_no_nodes_known_judges_nothing if {
	d := {"request": {"operation": "CREATE"}, "trainJob": {"suspend": false}, "job": {"mpi": true}, "parameters": {"node-capacity": params}}
	count(node_capacity.deny) == 0 with input as d
	count(node_capacity.warn) == 0 with input as d
}

test_running_job_update_not_judged if {
	d := object.union(doc({"nodes": 8, "replicatedJobs": [launcher, worker(0, [{"resource": "nvidia.com/gpu", "asks": "16", "largest": "8"}])], "gang": gang(6)}), {
		"request": {"operation": "UPDATE"},
		"oldTrainJob": {"suspend": false},
	})
	count(node_capacity.deny) == 0 with input as d
}

test_resume_judged if {
	d := object.union(doc({"nodes": 8, "replicatedJobs": [launcher, worker(0, [{"resource": "nvidia.com/gpu", "asks": "16", "largest": "8"}])], "gang": gang(6)}), {
		"request": {"operation": "UPDATE"},
		"oldTrainJob": {"suspend": true},
	})
	count(node_capacity.deny) == 1 with input as d
}
