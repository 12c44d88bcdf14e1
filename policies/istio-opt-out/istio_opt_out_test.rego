package mpiguard.policies.istio_opt_out_test

import data.mpiguard.policies.istio_opt_out

# params are the policy's parameters as the engine passes them: complete,
# here with the schema's defaults (parameters.schema.yaml).
params := {
	"optOutLabels": {
		"sidecar.istio.io/inject": "false",
		"istio.io/dataplane-mode": "none",
	},
	"optIn": {
		"sidecar.istio.io/inject": ["true"],
		"istio.io/dataplane-mode": ["ambient"],
	},
}

job_input(op, pods) := {
	"request": {"operation": op},
	"parameters": {"istio-opt-out": params},
	"namespace": {"name": "team-a"},
	"trainJob": {"name": "train", "namespace": "team-a", "runtimePatchManagers": ["mpiguard.io/admission"]},
	"runtime": {"kind": "ClusterTrainingRuntime", "name": "openmpi"},
	"job": {"mpi": true, "replicatedJobs": pods},
}

# The runtime's template opts in, the TrainJob has no patches of its own:
# the denial names the runtime and says a cluster admin fixes it.
runtime_msg(where) := sprintf(`the Worker pods opt in to the Istio mesh (%s sidecar.istio.io/inject="true"); MPI traffic between the Launcher and the Workers breaks behind a sidecar or ambient proxy; this comes from ClusterTrainingRuntime "openmpi" (the TrainJob has no runtime patches of its own): ask a cluster admin to remove sidecar.istio.io/inject from the pod template there, or override it for this TrainJob with spec.runtimePatches; or ask an admin to exempt the namespace`, [where])

test_labels_every_pod_template if {
	inp := job_input("CREATE", [{"name": "launcher", "role": "launcher"}, {"name": "node", "role": "worker"}])
	istio_opt_out.mutate == {
		{"target": "podTemplate", "replicatedJob": "launcher", "field": "metadata.labels", "key": "sidecar.istio.io/inject", "value": "false"},
		{"target": "podTemplate", "replicatedJob": "launcher", "field": "metadata.labels", "key": "istio.io/dataplane-mode", "value": "none"},
		{"target": "podTemplate", "replicatedJob": "node", "field": "metadata.labels", "key": "sidecar.istio.io/inject", "value": "false"},
		{"target": "podTemplate", "replicatedJob": "node", "field": "metadata.labels", "key": "istio.io/dataplane-mode", "value": "none"},
	} with input as inp
}

test_opted_out_allowed if {
	inp := job_input("UPDATE", [{"name": "node", "role": "worker", "labels": {"sidecar.istio.io/inject": "false"}}])
	count(istio_opt_out.deny) == 0 with input as inp
}

test_sidecar_annotation_opt_in_denied if {
	inp := job_input("CREATE", [{"name": "node", "role": "worker", "annotations": {"sidecar.istio.io/inject": "true"}}])
	got := istio_opt_out.deny with input as inp
	got == {{"field": "spec.runtimeRef", "msg": runtime_msg("annotations")}}
}

# A TrainJob with runtime patches of its own is told to fix them.
test_opt_in_with_own_patches_names_them if {
	inp := object.union(
		job_input("CREATE", [{"name": "node", "role": "worker", "labels": {"sidecar.istio.io/inject": "true"}}]),
		{"trainJob": {"runtimePatchManagers": ["mpiguard.io/admission", "team-a/pipeline"]}},
	)
	got := istio_opt_out.deny with input as inp
	got == {{
		"field": "spec.runtimePatches",
		"msg": `the Worker pods opt in to the Istio mesh (labels sidecar.istio.io/inject="true"); MPI traffic between the Launcher and the Workers breaks behind a sidecar or ambient proxy; remove sidecar.istio.io/inject from the pod template in spec.runtimePatches (or ask a cluster admin to, in ClusterTrainingRuntime "openmpi", if its template sets it); or ask an admin to exempt the namespace`,
	}}
}

test_ambient_label_opt_in_denied if {
	inp := job_input("CREATE", [{"name": "launcher", "role": "launcher", "labels": {"istio.io/dataplane-mode": "ambient"}}])
	count(istio_opt_out.deny) == 1 with input as inp
}

test_non_mpi_untouched if {
	inp := object.union(job_input("CREATE", [{"name": "node", "role": "worker"}]), {"job": {"mpi": false}})
	count(istio_opt_out.mutate) == 0 with input as inp
}

# mpiguard's own opt-out label, applied last, would override an opt-in label
# the runtime or a runtime patch asks for: the job is still denied.
test_opt_in_overridden_by_mpiguard_denied if {
	inp := job_input("CREATE", [{
		"name": "node", "role": "worker",
		"labels": {"sidecar.istio.io/inject": "false"},
		"requested": {"labels": {"sidecar.istio.io/inject": "true"}, "annotations": {}},
	}])
	got := istio_opt_out.deny with input as inp
	got == {{"field": "spec.runtimeRef", "msg": runtime_msg("labels")}}
}

test_opt_in_reaching_the_pods_denied_once if {
	inp := job_input("CREATE", [{
		"name": "node", "role": "worker",
		"annotations": {"sidecar.istio.io/inject": "true"},
		"requested": {"labels": {}, "annotations": {"sidecar.istio.io/inject": "true"}},
	}])
	count(istio_opt_out.deny) == 1 with input as inp
}
