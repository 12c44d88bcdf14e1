package mpiguard.policies.mpiguard_entry_test

import data.mpiguard.policies.mpiguard_entry

job_input(op, entries) := {
	"request": {"operation": op},
	"namespace": {"name": "team-a"},
	"trainJob": {"name": "train", "namespace": "team-a", "mpiguardEntries": entries},
	"job": {"mpi": true, "replicatedJobs": [{"name": "node", "role": "worker"}]},
}

test_no_entry_allowed if {
	count(mpiguard_entry.deny) == 0 with input as job_input("CREATE", [])
}

test_mpiguards_own_entry_allowed if {
	inp := job_input("CREATE", [{"field": "spec.runtimePatches[0]", "foreignFields": [], "differences": [], "mpiguardWrites": true}])
	count(mpiguard_entry.deny) == 0 with input as inp
}

test_entry_with_env_denied if {
	inp := job_input("CREATE", [{
		"field": "spec.runtimePatches[1]",
		"foreignFields": ["spec.runtimePatches[1].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers"],
		"differences": ["spec.runtimePatches[1].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers"],
		"mpiguardWrites": true,
	}])
	got := mpiguard_entry.deny with input as inp
	got == {{
		"field": "spec.runtimePatches[1]",
		"msg": "spec.runtimePatches[1] has manager mpiguard.io/admission, which is reserved for mpiguard's own entry, but sets spec.runtimePatches[1].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers, which mpiguard never writes (it writes only pod template labels, annotations, node selector and required node affinity); an entry under mpiguard's name is trusted as mpiguard's work, so it must not carry anything else; remove the runtimePatches entry with manager mpiguard.io/admission or give it a manager of your own; mpiguard writes its entry itself",
	}}
}

test_entry_differing_denied_once if {
	inp := job_input("UPDATE", [{
		"field": "spec.runtimePatches[0]",
		"foreignFields": [],
		"differences": ["a", "b", "c", "d", "e"],
		"mpiguardWrites": true,
	}])
	got := mpiguard_entry.deny with input as inp
	count(got) == 1
	some v in got
	contains(v.msg, "is not mpiguard's entry for this TrainJob (it differs at a, b, c and 2 more)")
	contains(v.msg, "remove the runtimePatches entry with manager mpiguard.io/admission or give it a manager of your own")
}

test_non_mpi_untouched if {
	inp := object.union(
		job_input("CREATE", [{"field": "spec.runtimePatches[0]", "foreignFields": ["x"], "differences": ["x"], "mpiguardWrites": true}]),
		{"job": {"mpi": false}},
	)
	count(mpiguard_entry.deny) == 0 with input as inp
}

test_entry_where_mpiguard_writes_none_denied if {
	inp := job_input("CREATE", [{
		"field": "spec.runtimePatches[0]",
		"foreignFields": [],
		"differences": ["spec.runtimePatches[0]"],
		"mpiguardWrites": false,
	}])
	got := mpiguard_entry.deny with input as inp
	count(got) == 1
	some v in got
	contains(v.msg, "but mpiguard writes no such entry for this TrainJob")
}

# update_managers is an UPDATE from a stored job with runtime patch managers
# old to one with managers new.
update_managers(old, new) := object.union(job_input("UPDATE", []), {
	"oldTrainJob": {"name": "train", "namespace": "team-a", "runtimePatchManagers": old},
	"trainJob": {"runtimePatchManagers": new},
})

test_update_dropping_the_stored_entry_denied if {
	got := mpiguard_entry.deny with input as update_managers(["kueue.x-k8s.io/manager", "mpiguard.io/admission"], ["kueue.x-k8s.io/manager"])
	got == {{
		"field": "spec.runtimePatches",
		"msg": "the update removes the runtimePatches entry with manager mpiguard.io/admission, which mpiguard wrote when the TrainJob was admitted (its pod template changes: Istio opt-out, data residency node affinity); keep that entry as stored in the object you write (a client built against a TrainJob type without spec.runtimePatches drops it: use one that knows it, or patch only the fields you change)",
	}}
	count(mpiguard_entry.deny) == 1 with input as update_managers(["mpiguard.io/admission"], [])
}

test_update_keeping_the_stored_entry_allowed if {
	count(mpiguard_entry.deny) == 0 with input as update_managers(["mpiguard.io/admission"], ["kueue.x-k8s.io/manager", "mpiguard.io/admission"])
	count(mpiguard_entry.deny) == 0 with input as update_managers([], ["kueue.x-k8s.io/manager"])
}
