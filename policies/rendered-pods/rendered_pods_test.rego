package mpiguard.policies.rendered_pods_test

import data.mpiguard.policies.rendered_pods

job_input(problems) := {
	"request": {"operation": "CREATE"},
	"trainJob": {"name": "train", "namespace": "team-a"},
	"job": {"mpi": true, "problems": problems},
}

test_valid_pods_allowed if {
	count(rendered_pods.deny) == 0 with input as job_input([])
}

test_each_problem_denied_with_its_detail if {
	got := rendered_pods.deny with input as job_input([
		{
			"field": "spec.replicatedJobs[node].template.spec.template.spec.containers[node].resources.requests[memory]",
			"type": "FieldValueInvalid",
			"detail": `Invalid value: "32Gi": must be less than or equal to memory limit of 1Gi`,
		},
		{
			"field": "spec.replicatedJobs[launcher].template.spec.template.spec.containers[launcher].image",
			"type": "FieldValueRequired",
			"detail": "Required value",
		},
	])
	got == {
		{
			"field": "spec.replicatedJobs[node].template.spec.template.spec.containers[node].resources.requests[memory]",
			"msg": `the Trainer would create pods the apiserver rejects: Invalid value: "32Gi": must be less than or equal to memory limit of 1Gi`,
		},
		{
			"field": "spec.replicatedJobs[launcher].template.spec.template.spec.containers[launcher].image",
			"msg": "the Trainer would create pods the apiserver rejects: Required value",
		},
	}
}
