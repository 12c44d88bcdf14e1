package mpiguard.policies.data_residency_test

import data.mpiguard.policies.data_residency

region := "topology.kubernetes.io/region"

# params are the policy's parameters as the engine passes them: complete, the
# schema's defaults (parameters.schema.yaml) but for zone eu's values.
params(values) := {"data-residency": {
	"namespaceLabel": "mpiguard.io/data-residency",
	"nodeLabel": region,
	"zones": {"eu": values},
}}

job_input(op, pods, values) := {
	"request": {"operation": op},
	"namespace": {"name": "team-eu", "labels": {"mpiguard.io/data-residency": "eu"}},
	"trainJob": {"name": "train", "namespace": "team-eu", "runtimePatchManagers": ["mpiguard.io/admission", "team-eu/pipeline"]},
	"runtime": {"kind": "ClusterTrainingRuntime", "name": "openmpi"},
	"job": {"mpi": true, "replicatedJobs": pods},
	"parameters": params(values),
}

# Go always sets nodeSelector and requiredNodeSelectorTerms (maybe empty).
placement := {"nodeSelector": {}, "requiredNodeSelectorTerms": []}

launcher(extra) := object.union(object.union({"name": "launcher", "role": "launcher", "pods": 1}, placement), extra)

worker(extra) := object.union(object.union({"name": "node", "role": "worker", "pods": 2}, placement), extra)

in_eu := {"nodeSelector": {"topology.kubernetes.io/region": "eu-west-1"}}

test_single_value_mutates_node_selector if {
	inp := job_input("CREATE", [launcher({}), worker({})], ["eu-west-1"])
	data_residency.mutate == {
		{"target": "podTemplate", "replicatedJob": "launcher", "field": "spec.nodeSelector", "key": region, "value": "eu-west-1"},
		{"target": "podTemplate", "replicatedJob": "node", "field": "spec.nodeSelector", "key": region, "value": "eu-west-1"},
	} with input as inp
}

test_several_values_mutate_affinity_idempotently if {
	expr := {"key": region, "operator": "In", "values": ["eu-central-1", "eu-west-1"]}
	gpu := {"key": "gpu", "operator": "Exists"}
	inp := job_input("CREATE", [worker({"requiredNodeSelectorTerms": [{"matchExpressions": [gpu]}]})], ["eu-west-1", "eu-central-1"])
	first := data_residency.mutate with input as inp
	want_terms := [{"matchExpressions": [gpu, expr]}]
	first == {{"target": "podTemplate", "replicatedJob": "node", "field": data_residency.terms_field, "value": want_terms}}

	# Applying the mutation and evaluating again yields the same patch.
	again := job_input("CREATE", [worker({"requiredNodeSelectorTerms": want_terms})], ["eu-west-1", "eu-central-1"])
	second := data_residency.mutate with input as again
	second == first
	count(data_residency.deny) == 0 with input as again
}

test_restricted_pods_allowed if {
	inp := job_input("UPDATE", [launcher(in_eu), worker(in_eu)], ["eu-west-1", "eu-central-1"])
	count(data_residency.deny) == 0 with input as inp
}

test_unrestricted_worker_denied if {
	inp := job_input("UPDATE", [launcher(in_eu), worker({})], ["eu-west-1", "eu-central-1"])
	got := data_residency.deny with input as inp
	got == {{
		"field": "spec.runtimePatches",
		"msg": `the Worker pods may run outside data residency zone "eu": no nodeSelector or required node affinity restricts topology.kubernetes.io/region; restrict them to topology.kubernetes.io/region in {eu-central-1, eu-west-1} (remove selectors and required affinity for other values) in spec.runtimePatches (or ask a cluster admin to, in ClusterTrainingRuntime "openmpi", if its template sets it)`,
	}}
}

test_selector_for_other_region_denied if {
	inp := job_input("UPDATE", [launcher({"nodeSelector": {region: "us-east-1"}})], ["eu-west-1"])
	got := data_residency.deny with input as inp
	got == {{
		"field": "spec.runtimePatches",
		"msg": `the Launcher pods may run outside data residency zone "eu": nodeSelector topology.kubernetes.io/region=us-east-1 is outside the zone; restrict them to topology.kubernetes.io/region in {eu-west-1} (remove selectors and required affinity for other values) in spec.runtimePatches (or ask a cluster admin to, in ClusterTrainingRuntime "openmpi", if its template sets it)`,
	}}
}

# Without runtime patches of its own, the pods are the runtime's: the denial
# names the runtime and a cluster admin, not a field the TrainJob lacks.
test_runtime_outside_zone_names_the_runtime if {
	inp := object.union(
		job_input("UPDATE", [launcher({"nodeSelector": {region: "us-east-1"}})], ["eu-west-1"]),
		{"trainJob": {"runtimePatchManagers": ["mpiguard.io/admission"]}},
	)
	got := data_residency.deny with input as inp
	got == {{
		"field": "spec.runtimeRef",
		"msg": `the Launcher pods may run outside data residency zone "eu": nodeSelector topology.kubernetes.io/region=us-east-1 is outside the zone; this comes from ClusterTrainingRuntime "openmpi" (the TrainJob has no runtime patches of its own): ask a cluster admin to restrict them to topology.kubernetes.io/region in {eu-west-1} (remove selectors and required affinity for other values) there, or override it for this TrainJob with spec.runtimePatches`,
	}}
}

test_affinity_for_other_region_denied if {
	term := {"matchExpressions": [{"key": region, "operator": "In", "values": ["eu-west-1", "us-east-1"]}]}
	inp := job_input("CREATE", [worker(object.union(in_eu, {"requiredNodeSelectorTerms": [term]}))], ["eu-west-1"])
	got := data_residency.deny with input as inp
	got == {{
		"field": "spec.runtimePatches",
		"msg": `the Worker pods may run outside data residency zone "eu": required node affinity allows topology.kubernetes.io/region=us-east-1; restrict them to topology.kubernetes.io/region in {eu-west-1} (remove selectors and required affinity for other values) in spec.runtimePatches (or ask a cluster admin to, in ClusterTrainingRuntime "openmpi", if its template sets it)`,
	}}
}

# The shapes the mutation leaves are allowed; a selector for another value
# beside them is still denied.
test_mutated_shapes_allowed_other_selector_denied if {
	values := ["eu-west-1", "eu-central-1"]
	zone_term := {"matchExpressions": [{"key": region, "operator": "In", "values": ["eu-central-1", "eu-west-1"]}]}
	count(data_residency.deny) == 0 with input as job_input("UPDATE", [worker({"requiredNodeSelectorTerms": [zone_term]})], values)
	count(data_residency.deny) == 0 with input as job_input("UPDATE", [worker(in_eu)], values)
	count(data_residency.deny) == 0 with input as job_input("UPDATE", [worker(object.union(in_eu, {"requiredNodeSelectorTerms": [zone_term]}))], values)
	got := data_residency.deny with input as job_input("UPDATE", [worker({"nodeSelector": {region: "us-east-1"}, "requiredNodeSelectorTerms": [zone_term]})], values)
	got == {{
		"field": "spec.runtimePatches",
		"msg": `the Worker pods may run outside data residency zone "eu": nodeSelector topology.kubernetes.io/region=us-east-1 is outside the zone; restrict them to topology.kubernetes.io/region in {eu-central-1, eu-west-1} (remove selectors and required affinity for other values) in spec.runtimePatches (or ask a cluster admin to, in ClusterTrainingRuntime "openmpi", if its template sets it)`,
	}}
}

test_one_unrestricted_term_denied if {
	ok := {"matchExpressions": [{"key": region, "operator": "In", "values": ["eu-west-1"]}]}
	open := {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}
	inp := job_input("UPDATE", [worker({"requiredNodeSelectorTerms": [ok, open]})], ["eu-west-1"])
	count(data_residency.deny) == 1 with input as inp
}

test_unknown_zone_denied if {
	inp := object.union(job_input("CREATE", [worker({})], ["eu-west-1"]), {"namespace": {"labels": {"mpiguard.io/data-residency": "mars"}}})
	got := data_residency.deny with input as inp
	got == {{
		"field": "metadata.namespace",
		"msg": `namespace "team-eu" is labelled mpiguard.io/data-residency="mars" but no such data residency zone is configured, so mpiguard cannot tell where its pods may run; ask an admin to add zone "mars" to the data-residency parameters or fix the label`,
	}}
}

test_unlabelled_namespace_ignored if {
	inp := json.remove(job_input("CREATE", [worker({})], ["eu-west-1"]), ["namespace/labels"])
	count(data_residency.deny) == 0 with input as inp
	count(data_residency.mutate) == 0 with input as inp
}
