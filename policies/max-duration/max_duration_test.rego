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
