# istio-opt-out: MPI launchers reach workers over SSH on pod IPs and ranks talk
# directly to each other; a sidecar or ambient proxy in the way breaks or slows
# that traffic. Mutate (CREATE): label every pod template out of sidecar
# injection and ambient mode. Validate: deny a pod template that explicitly
# opts back in (exempt namespaces are skipped by the engine's exemptions),
# whether the opt-in reaches the pods or not: mpiguard's own opt-out label is
# applied last and would silently override an opt-in label of the runtime or
# of a runtime patch (rj.requested holds the labels and annotations without
# mpiguard's entry), reversing an explicit choice without a word.
package mpiguard.policies.istio_opt_out

import data.mpiguard.lib

# The parameters (defaults and meaning: parameters.schema.yaml): optOutLabels
# (the labels that keep pods out of the mesh) and optIn (per label or
# annotation key, the values that opt a pod back in).
params := input.parameters["istio-opt-out"]

mutate contains {"target": "podTemplate", "replicatedJob": rj.name, "field": "metadata.labels", "key": key, "value": value} if {
	lib.mpi_job
	lib.is_create
	some rj in input.job.replicatedJobs
	some key, value in params.optOutLabels
}

# An opt-in the pods get, or one asked for that mpiguard's own label would
# override: one denial either way.
deny contains lib.violation(lib.pods_field, msg_istio_opt_in(rj, where, key, value)) if {
	lib.mpi_job
	some rj in input.job.replicatedJobs
	some where in ["labels", "annotations"]
	some key, values in params.optIn
	some value in ({v | v := rj[where][key]} | {v | v := rj.requested[where][key]})
	value in values
}

msg_istio_opt_in(rj, where, key, value) := sprintf(
	"the %s pods opt in to the Istio mesh (%s %s=%q); MPI traffic between the Launcher and the Workers breaks behind a sidecar or ambient proxy; %s; or ask an admin to exempt the namespace",
	[lib.role_label(rj), where, key, value, lib.pods_fix(sprintf("remove %s from the pod template", [key]))],
)
