package mpiguard.policies.runtime_constraints_test

import data.mpiguard.policies.runtime_constraints

# Go always sets nodeSelector and requiredNodeSelectorTerms (maybe empty).
placement := {"nodeSelector": {}, "requiredNodeSelectorTerms": []}

launcher(extra) := object.union(object.union({"name": "launcher", "role": "launcher", "pods": 1}, placement), extra)

worker(extra) := object.union(object.union({"name": "node", "role": "worker", "pods": 3}, placement), extra)

job_input(ns, constraints, job) := {
	"request": {"operation": "CREATE"},
	"namespace": {"name": ns, "labels": {}, "annotations": {}},
	"trainJob": {"name": "train", "namespace": ns},
	"runtime": {"kind": "ClusterTrainingRuntime", "name": "gpu-openmpi", "constraints": object.union({"errors": []}, constraints)},
	"job": object.union(
		{"mpi": true, "numNodes": 3, "gpusPerWorker": 4, "replicatedJobs": [launcher({}), worker({})]},
		job,
	),
}

deny_of(inp) := d if {
	d := runtime_constraints.deny with input as inp
}

pool_gpu := {"nodeSelector": {"pool": "gpu"}}

test_unconstrained_runtime_allows if {
	count(deny_of(job_input("team-a", {}, {}))) == 0
}

test_within_every_limit_allows if {
	c := {"maxNodes": 3, "maxGPUsPerWorker": 4, "requiredNodeLabels": {"pool": "gpu"}, "allowedNamespaces": ["team-b", "team-*"]}
	count(deny_of(job_input("team-a", c, {"replicatedJobs": [launcher(pool_gpu), worker(pool_gpu)]}))) == 0
}

test_non_mpi_job_is_not_governed if {
	c := {"maxNodes": 1, "errors": ["bad"]}
	count(deny_of(job_input("team-a", c, {"mpi": false}))) == 0
}

test_too_many_workers_denied if {
	deny_of(job_input("team-a", {"maxNodes": 2}, {})) == {{
		"field": "spec.trainer.numNodes",
		"msg": "TrainJob asks for 3 hostfile nodes (spec.trainer.numNodes) but runtime gpu-openmpi allows at most 2 per TrainJob (mpiguard.io/max-nodes); lower spec.trainer.numNodes to 2 or less",
	}}
}

test_too_many_gpus_denied if {
	deny_of(job_input("team-a", {"maxGPUsPerWorker": 2}, {})) == {{
		"field": "spec.trainer.resourcesPerNode",
		"msg": "TrainJob gives each Worker 4 GPUs but runtime gpu-openmpi allows at most 2 per Worker (mpiguard.io/max-gpus-per-worker); request 2 or fewer GPUs per node in spec.trainer.resourcesPerNode and add Workers instead",
	}}
}

test_zero_gpus_forbids_gpus if {
	count(deny_of(job_input("team-a", {"maxGPUsPerWorker": 0}, {}))) == 1
	count(deny_of(job_input("team-a", {"maxGPUsPerWorker": 0}, {"gpusPerWorker": 0}))) == 0
}

test_namespace_not_allowed_denied if {
	deny_of(job_input("web", {"allowedNamespaces": ["ml-*", "team-a"]}, {})) == {{
		"field": "spec.runtimeRef.name",
		"msg": `runtime gpu-openmpi may only be used from namespaces ml-*, team-a, and this TrainJob is in "web"; use another runtime or ask a cluster admin to allow the namespace (mpiguard.io/allowed-namespaces)`,
	}}
}

test_namespace_globs_read_as_path_match if {
	allowed(["ml-*"], "ml-vision")
	allowed(["team-?"], "team-a")
	allowed(["team-[ab]"], "team-b")
	allowed(["team-[^ab]"], "team-c")
	not allowed(["team-[^ab]"], "team-a")
	not allowed(["ml-*"], "team-a")
	not allowed(["team-?"], "team-ab")

	# Braces are literal to path.Match; glob.match must not read them as alternatives.
	not allowed(["{team-a,team-b}"], "team-a")
}

allowed(patterns, ns) if count(deny_of(job_input(ns, {"allowedNamespaces": patterns}, {}))) == 0

test_required_label_missing_on_launcher_denied if {
	c := {"requiredNodeLabels": {"pool": "gpu", "fast-net": ""}}
	deny_of(job_input("team-a", c, {"replicatedJobs": [
		launcher({"nodeSelector": {"pool": "cpu"}}),
		worker({"nodeSelector": {"pool": "gpu", "fast-net": "true"}}),
	]})) == {{
		"field": "spec.runtimePatches",
		"msg": "the Launcher pods are not pinned to nodes labelled fast-net, pool=gpu, which runtime gpu-openmpi requires (mpiguard.io/required-node-labels); add them to the pods' nodeSelector with spec.runtimePatches, or ask a cluster admin to pin the runtime's pods",
	}}
}

test_required_label_missing_on_both_denied_per_role if {
	got := deny_of(job_input("team-a", {"requiredNodeLabels": {"pool": "gpu"}}, {}))
	{v.msg | some v in got} == {
		"the Launcher pods are not pinned to nodes labelled pool=gpu, which runtime gpu-openmpi requires (mpiguard.io/required-node-labels); add them to the pods' nodeSelector with spec.runtimePatches, or ask a cluster admin to pin the runtime's pods",
		"the Worker pods are not pinned to nodes labelled pool=gpu, which runtime gpu-openmpi requires (mpiguard.io/required-node-labels); add them to the pods' nodeSelector with spec.runtimePatches, or ask a cluster admin to pin the runtime's pods",
	}
}

test_other_replicated_jobs_need_no_pinning if {
	other := {"name": "initializer", "role": "other", "pods": 1, "nodeSelector": {}, "requiredNodeSelectorTerms": []}
	inp := job_input("team-a", {"requiredNodeLabels": {"pool": "gpu"}}, {"replicatedJobs": [launcher(pool_gpu), worker(pool_gpu), other]})
	count(deny_of(inp)) == 0
}

# Required node affinity pins a label when every (ORed) term has In with only that value.
test_required_affinity_pins if {
	in_gpu := {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}
	pinned_by([in_gpu])
	pinned_by([in_gpu, {"matchExpressions": [{"key": "zone", "operator": "Exists"}, {"key": "pool", "operator": "In", "values": ["gpu", "gpu"]}]}])
	not pinned_by([in_gpu, {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}])
	not pinned_by([{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu", "cpu"]}]}])
	not pinned_by([{"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["cpu"]}]}])
	not pinned_by([{"matchExpressions": [{"key": "pool", "operator": "Exists"}]}])
	not pinned_by([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}])
}

pinned_by(terms) if {
	rj := {"requiredNodeSelectorTerms": terms}
	count(deny_of(job_input("team-a", {"requiredNodeLabels": {"pool": "gpu"}}, {"replicatedJobs": [launcher(rj), worker(rj)]}))) == 0
}

test_bare_key_pinned_by_any_value_or_exists if {
	c := {"requiredNodeLabels": {"nvidia.com/gpu.present": ""}}
	by_selector := {"nodeSelector": {"nvidia.com/gpu.present": "true"}}
	by_exists := {"requiredNodeSelectorTerms": [{"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "Exists"}]}]}
	count(deny_of(job_input("team-a", c, {"replicatedJobs": [launcher(by_selector), worker(by_exists)]}))) == 0
	count(deny_of(job_input("team-a", c, {"replicatedJobs": [launcher(by_selector), worker({})]}))) == 1
}

test_malformed_annotation_denied if {
	err := `metadata.annotations[mpiguard.io/max-workers]: Invalid value: "many": must be a whole number of hostfile nodes (spec.trainer.numNodes: every Worker, and the Launcher when it runs as a node), at least 1 (e.g. "8")`
	deny_of(job_input("team-a", {"errors": [err]}, {})) == {{
		"field": "spec.runtimeRef.name",
		"msg": `ClusterTrainingRuntime gpu-openmpi has a malformed constraint annotation (metadata.annotations[mpiguard.io/max-workers]: Invalid value: "many": must be a whole number of hostfile nodes (spec.trainer.numNodes: every Worker, and the Launcher when it runs as a node), at least 1 (e.g. "8")), so mpiguard cannot tell which TrainJobs the runtime allows; a cluster admin must fix the annotation on the runtime (see docs/runtimes.md), or use another runtime`,
	}}
}

# A malformed annotation does not lift the well-formed limits beside it.
test_malformed_annotation_keeps_other_limits if {
	got := deny_of(job_input("team-a", {"errors": ["metadata.annotations[mpiguard.io/max-gpus-per-worker]: ..."], "maxNodes": 2}, {}))
	{v.field | some v in got} == {"spec.runtimeRef.name", "spec.trainer.numNodes"}
}

# Priority classes.

with_label(inp, labels) := object.union(inp, {"trainJob": object.union(inp.trainJob, {"labels": labels})})

priorities := {"allowedPriorityClasses": ["ml-low", "ml-high"], "defaultPriorityClass": "ml-low"}

test_allowed_priority_class_allows if {
	count(deny_of(with_label(job_input("team-a", priorities, {}), {"kueue.x-k8s.io/priority-class": "ml-high"}))) == 0
}

test_priority_class_not_allowed_denied if {
	deny_of(with_label(job_input("team-a", priorities, {}), {"kueue.x-k8s.io/priority-class": "urgent"})) == {{
		"field": "metadata.labels[kueue.x-k8s.io/priority-class]",
		"msg": "TrainJob asks for priority class \"urgent\" (label kueue.x-k8s.io/priority-class) but runtime gpu-openmpi allows only ml-low, ml-high (mpiguard.io/allowed-priority-classes); set the label to one of them (the runtime's default is \"ml-low\")",
	}}
}

test_pod_priority_class_not_allowed_denied if {
	d := deny_of(job_input("team-a", priorities, {"replicatedJobs": [launcher({"priorityClassName": "ml-low"}), worker({"priorityClassName": "system-node-critical"})]}))
	d == {{
		"field": "spec.runtimeRef.name",
		"msg": "the Worker pods run at priority class \"system-node-critical\" (the runtime template's priorityClassName) but runtime gpu-openmpi allows only ml-low, ml-high (mpiguard.io/allowed-priority-classes); a cluster admin must fix the runtime's template, or use another runtime",
	}}
}

mutate_of(inp) := m if {
	m := runtime_constraints.mutate with input as inp
}

test_no_priority_class_gets_the_default if {
	mutate_of(job_input("team-a", priorities, {})) == {{"target": "trainJob", "field": "metadata.labels", "key": "kueue.x-k8s.io/priority-class", "value": "ml-low"}}
	count(deny_of(job_input("team-a", priorities, {}))) == 0
	# A job that names one, or whose pods have one, keeps it; so does an update.
	count(mutate_of(with_label(job_input("team-a", priorities, {}), {"kueue.x-k8s.io/priority-class": "ml-high"}))) == 0
	count(mutate_of(job_input("team-a", priorities, {"replicatedJobs": [launcher({"priorityClassName": "ml-high"}), worker({})]}))) == 0
	count(mutate_of(object.union(job_input("team-a", priorities, {}), {"request": {"operation": "UPDATE"}}))) == 0
	# No default, no label.
	count(mutate_of(job_input("team-a", {"allowedPriorityClasses": ["ml-low"]}, {}))) == 0
}

# Gangs.

with_gang(inp, gang) := object.union(inp, {"gang": gang})

cosched(extra) := object.union({"scheduler": "coscheduling", "minMember": 4}, extra)

test_gang_timeout_in_range_allows if {
	c := {"gangScheduleTimeoutSeconds": {"min": 60, "max": 600}}
	count(deny_of(with_gang(job_input("team-a", c, {}), cosched({"scheduleTimeoutSeconds": 120})))) == 0
	count(deny_of(with_gang(job_input("team-a", c, {}), cosched({"scheduleTimeoutSeconds": 60})))) == 0
	count(deny_of(with_gang(job_input("team-a", c, {}), cosched({"scheduleTimeoutSeconds": 600})))) == 0
	# Volcano's PodGroup has no timeout, and a job without a gang has none to judge.
	count(deny_of(with_gang(job_input("team-a", c, {}), {"scheduler": "volcano", "minMember": 4}))) == 0
	count(deny_of(job_input("team-a", c, {}))) == 0
}

test_gang_timeout_out_of_range_denied if {
	c := {"gangScheduleTimeoutSeconds": {"min": 60, "max": 600}}
	deny_of(with_gang(job_input("team-a", c, {}), cosched({"scheduleTimeoutSeconds": 1200}))) == {{
		"field": "spec.runtimeRef.name",
		"msg": "runtime gpu-openmpi gives its coscheduling gang a schedule timeout of 1200 seconds but requires 60 to 600 seconds (mpiguard.io/gang-schedule-timeout-seconds); a cluster admin must set spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds on the runtime within it, or use another runtime",
	}}
	count(deny_of(with_gang(job_input("team-a", c, {}), cosched({"scheduleTimeoutSeconds": 30})))) == 1
}

test_gang_timeout_missing_denied if {
	deny_of(with_gang(job_input("team-a", {"gangScheduleTimeoutSeconds": {"max": 300}}, {}), cosched({}))) == {{
		"field": "spec.runtimeRef.name",
		"msg": "runtime gpu-openmpi gives its coscheduling gang no schedule timeout but requires one of at most 300 seconds (mpiguard.io/gang-schedule-timeout-seconds); a cluster admin must set spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds on the runtime, or use another runtime",
	}}
}

test_gang_min_available_all if {
	c := {"gangMinAvailable": "all"}
	count(deny_of(with_gang(job_input("team-a", c, {"total": {"pods": 4}}), cosched({})))) == 0
	deny_of(with_gang(job_input("team-a", c, {"total": {"pods": 4}}), cosched({"minMember": 3}))) == {{
		"field": "spec.trainer.numNodes",
		"msg": "TrainJob's gang holds 3 pods (its PodGroup's minMember) but runtime gpu-openmpi requires at least 4 to start together (mpiguard.io/gang-min-available: all); raise spec.trainer.numNodes so the job has 4 pods or more",
	}}
}

test_gang_min_available_count if {
	c := {"gangMinAvailable": 8}
	count(deny_of(with_gang(job_input("team-a", c, {}), {"scheduler": "volcano", "minMember": 8}))) == 0
	count(deny_of(with_gang(job_input("team-a", c, {}), {"scheduler": "volcano", "minMember": 4}))) == 1
}

test_gang_required_without_a_gang_denied if {
	deny_of(job_input("team-a", {"gangMinAvailable": "all"}, {})) == {{
		"field": "spec.runtimeRef.name",
		"msg": "runtime gpu-openmpi requires its jobs to be gang-scheduled (mpiguard.io/gang-min-available: all) but has no spec.podGroupPolicy, so its pods would start one by one; a cluster admin must give the runtime a Volcano or coscheduling podGroupPolicy, or use a gang variant of it",
	}}
}
