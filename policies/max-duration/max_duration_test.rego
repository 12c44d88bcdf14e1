package mpiguard.policies.max_duration_test

import data.mpiguard.policies.max_duration

# params are the policy's parameters as the engine passes them: complete,
# here with the schema's defaults (parameters.schema.yaml).
params := {
	"defaultHours": 24,
	"maxHours": 168,
	"namespaceAnnotation": "mpiguard.io/max-duration-hours",
}

create(deadline, annotations) := {
	"request": {"operation": "CREATE"},
	"parameters": {"max-duration": params},
	"trainJob": {"name": "train", "namespace": "team-a", "activeDeadlineSeconds": deadline},
	"namespace": {"name": "team-a", "annotations": annotations},
	"job": {"mpi": true},
}

test_default_deadline_set_when_absent if {
	inp := create(0, {})
	max_duration.mutate == {{"target": "trainJob", "field": "spec.activeDeadlineSeconds", "value": 86400}} with input as inp
}

test_no_mutation_when_set if {
	count(max_duration.mutate) == 0 with input as create(3600, {})
}

test_no_mutation_on_update if {
	inp := object.union(create(0, {}), {"request": {"operation": "UPDATE"}})
	count(max_duration.mutate) == 0 with input as inp
}

test_default_capped_by_lower_namespace_limit if {
	inp := create(0, {"mpiguard.io/max-duration-hours": "12"})
	max_duration.mutate == {{"target": "trainJob", "field": "spec.activeDeadlineSeconds", "value": 43200}} with input as inp
}

test_ceiling_exactly_allowed if {
	count(max_duration.deny) == 0 with input as create(604800, {})
}

test_over_ceiling_denied_in_hours if {
	got := max_duration.deny with input as create(720000, {})
	got == {{
		"field": "spec.activeDeadlineSeconds",
		"msg": "TrainJob may run for 200 hours (spec.activeDeadlineSeconds 720000) but the cluster allows at most 168 hours; set spec.activeDeadlineSeconds to 604800 (168 hours) or less, or ask an admin to raise the limit",
	}}
}

test_namespace_annotation_raises_limit if {
	count(max_duration.deny) == 0 with input as create(720000, {"mpiguard.io/max-duration-hours": "336"})
}

test_namespace_annotation_lowers_limit if {
	got := max_duration.deny with input as create(5400, {"mpiguard.io/max-duration-hours": "1"})
	got == {{
		"field": "spec.activeDeadlineSeconds",
		"msg": `TrainJob may run for 1.5 hours (spec.activeDeadlineSeconds 5400) but namespace "team-a" (annotation mpiguard.io/max-duration-hours) allows at most 1 hour; set spec.activeDeadlineSeconds to 3600 (1 hour) or less, or ask an admin to raise the limit`,
	}}
}

test_bad_annotation_denied if {
	got := max_duration.deny with input as create(3600, {"mpiguard.io/max-duration-hours": "a week"})
	got == {{
		"field": "metadata.namespace",
		"msg": `namespace "team-a" has annotation mpiguard.io/max-duration-hours="a week", which is not a positive number of hours (at least 1 second), so mpiguard cannot tell how long TrainJobs may run; ask an admin to fix the annotation`,
	}}
}

# Less than half a second of hours is no limit at all: it would round to 0
# and the default deadline set from it would be 0, which the TrainJob API
# refuses (found by TestPoliciesAreTotal).
test_annotation_below_one_second_denied if {
	got := max_duration.deny with input as create(3600, {"mpiguard.io/max-duration-hours": "0.0001"})
	got == {{
		"field": "metadata.namespace",
		"msg": `namespace "team-a" has annotation mpiguard.io/max-duration-hours="0.0001", which is not a positive number of hours (at least 1 second), so mpiguard cannot tell how long TrainJobs may run; ask an admin to fix the annotation`,
	}}
	max_duration.mutate == {{"target": "trainJob", "field": "spec.activeDeadlineSeconds", "value": 86400}} with input as create(0, {"mpiguard.io/max-duration-hours": "0.0001"})
}

test_missing_deadline_denied_at_validation if {
	got := max_duration.deny with input as create(0, {})
	got == {{
		"field": "spec.activeDeadlineSeconds",
		"msg": "TrainJob has no spec.activeDeadlineSeconds, so it may run forever, but the cluster allows at most 168 hours; set spec.activeDeadlineSeconds to 604800 (168 hours) or less",
	}}
}

test_custom_parameters if {
	inp := object.union(create(0, {}), {"parameters": {"max-duration": {"defaultHours": 2, "maxHours": 4}}})
	max_duration.mutate == {{"target": "trainJob", "field": "spec.activeDeadlineSeconds", "value": 7200}} with input as inp
}

test_hours if {
	max_duration.hours(86400) == "24 hours"
	max_duration.hours(3600) == "1 hour"
	max_duration.hours(5400) == "1.5 hours"
}

# update is an UPDATE from a stored job (deadline old, suspended or not) to
# one with deadline new, suspended or not.
update(old, old_suspended, new, new_suspended, annotations) := object.union(create(new, annotations), {
	"request": {"operation": "UPDATE"},
	"oldTrainJob": {"name": "train", "namespace": "team-a", "activeDeadlineSeconds": old, "suspend": old_suspended},
	"trainJob": {"suspend": new_suspended},
})

test_update_keeping_the_deadline_allowed if {
	# Above a ceiling lowered since: a running job's other updates are not blocked.
	count(max_duration.deny) == 0 with input as update(720000, false, 720000, false, {})
	count(max_duration.deny) == 0 with input as update(86400, true, 86400, true, {})
	count(max_duration.deny) == 0 with input as update(720000, false, 720000, true, {"mpiguard.io/max-duration-hours": "a week"})
}

test_update_adding_a_deadline_over_the_ceiling_denied if {
	# The CRD's immutability rule does not fire when the stored job has none.
	got := max_duration.deny with input as update(0, true, 720000, true, {})
	got == {{
		"field": "spec.activeDeadlineSeconds",
		"msg": "TrainJob may run for 200 hours (spec.activeDeadlineSeconds 720000) but the cluster allows at most 168 hours; set spec.activeDeadlineSeconds to 604800 (168 hours) or less, or ask an admin to raise the limit",
	}}
}

test_update_adding_a_deadline_within_the_ceiling_allowed if {
	count(max_duration.deny) == 0 with input as update(0, true, 3600, true, {})
}

test_update_raising_the_deadline_over_the_ceiling_denied if {
	got := max_duration.deny with input as update(86400, false, 720000, false, {})
	count(got) == 1
	some v in got
	startswith(v.msg, "TrainJob may run for 200 hours (spec.activeDeadlineSeconds 720000) but the cluster allows at most 168 hours")
}

test_update_raising_over_a_namespace_ceiling_denied if {
	got := max_duration.deny with input as update(3600, true, 7200, true, {"mpiguard.io/max-duration-hours": "1"})
	count(got) == 1
}

test_update_removing_the_deadline_denied if {
	got := max_duration.deny with input as update(86400, true, 0, false, {})
	got == {{
		"field": "spec.activeDeadlineSeconds",
		"msg": "the update removes spec.activeDeadlineSeconds (stored: 86400, 24 hours), which cannot change once set; keep spec.activeDeadlineSeconds 86400 in the object you write (a client built against a TrainJob type without the field drops it: use one that knows it, or patch only the fields you change)",
	}}
}

test_update_of_a_job_stored_without_a_deadline_allowed if {
	# Not mpiguard's to add on UPDATE: only CREATE sets the default.
	count(max_duration.deny) == 0 with input as update(0, true, 0, false, {})
	count(max_duration.mutate) == 0 with input as update(0, true, 0, false, {})
}

test_resume_over_a_lowered_ceiling_denied if {
	# The deadline counts from the resume, and cannot be changed any more.
	got := max_duration.deny with input as update(7200, true, 7200, false, {"mpiguard.io/max-duration-hours": "1"})
	got == {{
		"field": "spec.activeDeadlineSeconds",
		"msg": `TrainJob may run for 2 hours from its resume (spec.activeDeadlineSeconds 7200) but namespace "team-a" (annotation mpiguard.io/max-duration-hours) allows at most 1 hour; spec.activeDeadlineSeconds cannot change once set, so recreate the TrainJob with spec.activeDeadlineSeconds 3600 (1 hour) or less, or ask an admin to raise the limit`,
	}}
}

test_resume_within_the_ceiling_allowed if {
	count(max_duration.deny) == 0 with input as update(86400, true, 86400, false, {})
}

test_update_with_a_bad_annotation_denied_only_when_it_decides_the_deadline if {
	bad := {"mpiguard.io/max-duration-hours": "a week"}
	count(max_duration.deny) == 1 with input as update(0, true, 3600, true, bad)
	count(max_duration.deny) == 1 with input as update(3600, true, 3600, false, bad)
	count(max_duration.deny) == 0 with input as update(3600, false, 3600, false, bad)
}
