# Package lib holds what several mpiguard policies share: the shape of a
# violation, the admission operation, whether a job is governed, how a
# replicated job is named in messages (here) and exact quantity arithmetic and
# display (quantity.rego). Each policy's messages are in the policy itself.
package mpiguard.lib

# violation is the shape every deny and warn rule returns: the field the user
# should change and the message (what, why with numbers, how to fix).
violation(field, msg) := {"field": field, "msg": msg}

# is_create says the admission operation being decided is a CREATE.
is_create if input.request.operation == "CREATE"

# mpi_job says whether the job is governed at all (the engine also skips non-MPI jobs).
mpi_job if input.job.mpi == true

# role_label names a replicated job in messages: "Launcher", "Worker" or
# `replicated job "<name>"`, as in "the Worker pods".
role_label(rj) := "Launcher" if rj.role == "launcher"

role_label(rj) := "Worker" if rj.role == "worker"

role_label(rj) := sprintf("replicated job %q", [rj.name]) if rj.role == "other"

# runtime_named names the job's runtime in messages: `ClusterTrainingRuntime
# "mpiguard-openmpi"`.
runtime_named := sprintf("%s %q", [object.get(input, ["runtime", "kind"], "runtime"), object.get(input, ["runtime", "name"], "")])

# own_patches says the TrainJob carries runtime patches of its own (an entry
# of spec.runtimePatches under a manager other than mpiguard's). Without
# them, the pod templates are the runtime's (and mpiguard's entry): a problem
# in them is the runtime's, which a cluster admin fixes, not the TrainJob's.
own_patches if {
	some manager in input.trainJob.runtimePatchManagers
	manager != "mpiguard.io/admission"
}

# pods_field is the field a problem of the pod templates is fixed in: the
# TrainJob's spec.runtimePatches when it has patches of its own, else its
# runtime, which spec.runtimeRef names.
pods_field := "spec.runtimePatches" if own_patches

pods_field := "spec.runtimeRef" if not own_patches

# pods_fix says who makes a change (a verb phrase: "remove label x") to the
# pod templates, and where: the TrainJob's user in spec.runtimePatches, or a
# cluster admin in the runtime when the templates are the runtime's alone.
pods_fix(change) := sprintf("%s in spec.runtimePatches (or ask a cluster admin to, in %s, if its template sets it)", [change, runtime_named]) if own_patches

pods_fix(change) := sprintf("this comes from %s (the TrainJob has no runtime patches of its own): ask a cluster admin to %s there, or override it for this TrainJob with spec.runtimePatches", [runtime_named, change]) if not own_patches
