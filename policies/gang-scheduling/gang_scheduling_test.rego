package mpiguard.policies.gang_scheduling_test

import data.mpiguard.policies.gang_scheduling

# volcano_input is a CREATE of a 5-pod gang needing 16 GPUs (milli) in queue
# "team-a", whose chain is queues.
volcano_input(queues) := {
	"request": {"operation": "CREATE"},
	"trainJob": {"name": "resnet", "namespace": "team-a", "suspend": false},
	"runtime": {"name": "mpiguard-openmpi-volcano"},
	"gang": {
		"scheduler": "volcano",
		"minMember": 5,
		"volcano": {"served": true, "queue": "team-a", "annotated": true, "queues": queues},
	},
}

leaf(name, state, capability) := {"name": name, "exists": true, "state": state, "parent": "", "children": [], "capability": capability}

gpus(need, cap, allocated) := {
	"resource": "nvidia.com/gpu",
	"milli": need * 1000, "display": format_int(need, 10),
	"capability": cap * 1000, "capabilityDisplay": format_int(cap, 10),
	"allocated": allocated * 1000, "allocatedDisplay": format_int(allocated, 10),
}

test_fits_open_leaf_queue if {
	doc := volcano_input([leaf("team-a", "Open", [gpus(16, 16, 0)])])
	count(gang_scheduling.deny) == 0 with input as doc
	count(gang_scheduling.warn) == 0 with input as doc
}

test_over_capability_denied_with_numbers if {
	doc := volcano_input([leaf("team-a", "Open", [gpus(16, 8, 0)])])
	got := gang_scheduling.deny with input as doc
	got == {{
		"field": "spec.trainer",
		"msg": `the job's gang needs 16 nvidia.com/gpu (all 5 pods start together or none does) but Volcano queue "team-a" can hold at most 8 (spec.capability): the job would wait in the queue forever; reduce Workers or nvidia.com/gpu per Worker so the whole job needs at most 8, use a queue with more capability, or ask an admin to raise the capability of queue "team-a"`,
	}}
}

test_over_ancestor_capability_denied_naming_the_ancestor if {
	child := object.union(leaf("team-a", "Open", [gpus(16, 32, 0)]), {"parent": "eng"})
	parent := object.union(leaf("eng", "Open", [gpus(16, 8, 0)]), {"children": ["team-a"]})
	got := gang_scheduling.deny with input as volcano_input([child, parent])
	count(got) == 1
	some v in got
	contains(v.msg, `Volcano queue "eng", an ancestor of the job's queue "team-a", can hold at most 8`)
}

test_running_job_over_capability_still_denied if {
	# audit: a running job whose queue shrank.
	doc := object.union(volcano_input([leaf("team-a", "Closed", [gpus(16, 8, 16)])]), {
		"request": {"operation": "UPDATE"},
		"oldTrainJob": {"suspend": false},
	})
	got := gang_scheduling.deny with input as doc
	count(got) == 1
	count(gang_scheduling.warn) == 0 with input as doc
}

test_missing_queue_denied if {
	doc := volcano_input([{"name": "team-a", "exists": false, "state": "", "parent": "", "children": [], "capability": []}])
	got := gang_scheduling.deny with input as doc
	count(got) == 1
	some v in got
	startswith(v.msg, `the job's gang goes to Volcano queue "team-a" (annotation scheduling.volcano.sh/queue-name) but no Queue of that name exists`)
}

test_closed_queue_denied if {
	got := gang_scheduling.deny with input as volcano_input([leaf("team-a", "Closed", [])])
	count(got) == 1
	some v in got
	contains(v.msg, `whose state is "Closed": Volcano admits PodGroups only to an Open queue`)
}

test_parent_queue_denied_naming_its_children if {
	q := object.union(leaf("team-a", "Open", []), {"children": ["b", "a"]})
	got := gang_scheduling.deny with input as volcano_input([q])
	count(got) == 1
	some v in got
	contains(v.msg, `a parent queue (spec.parent of "a", "b")`)
}

test_root_queue_denied if {
	got := gang_scheduling.deny with input as volcano_input([leaf("root", "Open", [])])
	count(got) == 1
	some v in got
	contains(v.msg, `Volcano queue "root"`)
}

test_volcano_not_served_denied if {
	doc := json.patch(volcano_input([]), [{"op": "replace", "path": "/gang/volcano/served", "value": false}])
	got := gang_scheduling.deny with input as doc
	count(got) == 1
	some v in got
	contains(v.msg, "Volcano is not installed")
}

test_default_queue_named_as_default if {
	doc := json.patch(volcano_input([{"name": "default", "exists": false, "state": "", "parent": "", "children": [], "capability": []}]), [
		{"op": "replace", "path": "/gang/volcano/annotated", "value": false},
		{"op": "replace", "path": "/gang/volcano/queue", "value": "default"},
	])
	some v in gang_scheduling.deny with input as doc
	contains(v.msg, `Volcano queue "default" (Volcano's default queue: no scheduling.volcano.sh/queue-name annotation)`)
}

test_allocated_now_warns_not_denies if {
	doc := volcano_input([leaf("team-a", "Open", [gpus(8, 16, 12)])])
	count(gang_scheduling.deny) == 0 with input as doc
	got := gang_scheduling.warn with input as doc
	got == {{
		"field": "spec.trainer",
		"msg": `Volcano queue "team-a" has 12 of 16 nvidia.com/gpu allocated to running jobs now and the job's gang needs 8: the job will wait in the queue until that much is free (all 5 pods start together or none does)`,
	}}
}

test_suspended_create_not_judged_on_queue_state if {
	doc := json.patch(volcano_input([leaf("team-a", "Closed", [gpus(8, 16, 12)])]), [{"op": "replace", "path": "/trainJob/suspend", "value": true}])
	count(gang_scheduling.deny) == 0 with input as doc
	count(gang_scheduling.warn) == 0 with input as doc
}

cosched_input(gang) := {
	"request": {"operation": "CREATE"},
	"trainJob": {"name": "resnet", "namespace": "team-a", "suspend": false},
	"runtime": {"name": "gang"},
	"gang": object.union({"scheduler": "coscheduling", "minMember": 4}, gang),
}

test_coscheduling_zero_timeout_warns if {
	got := gang_scheduling.warn with input as cosched_input({"scheduleTimeoutSeconds": 0})
	count(got) == 1
	some v in got
	contains(v.msg, "scheduleTimeoutSeconds is 0 (or not set)")
}

test_coscheduling_absent_timeout_warns if {
	count(gang_scheduling.warn) == 1 with input as cosched_input({})
}

test_coscheduling_timeout_set_no_warning if {
	count(gang_scheduling.warn) == 0 with input as cosched_input({"scheduleTimeoutSeconds": 120})
	count(gang_scheduling.deny) == 0 with input as cosched_input({"scheduleTimeoutSeconds": 120})
}

test_no_gang_nothing if {
	doc := {"request": {"operation": "CREATE"}, "trainJob": {"suspend": false}, "runtime": {"name": "r"}}
	count(gang_scheduling.deny) == 0 with input as doc
	count(gang_scheduling.warn) == 0 with input as doc
}
