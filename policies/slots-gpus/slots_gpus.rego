# slots-gpus: every MPI rank gets a GPU (slots per worker equal, or at most,
# GPUs per worker), a job has at least one node and one slot, CPU-only workers
# are warned about sharing CPUs, and user env must not override the OMPI_MCA_*
# variables the Trainer's MPI plugin sets (they would desynchronise the hostfile).
package mpiguard.policies.slots_gpus

import data.mpiguard.lib

default_params := {
	# equal: slots per worker == GPUs per worker; at-most: slots <= GPUs.
	"mode": "equal",
	# The variables the Trainer's MPI plugin (v2.3.0) sets for OpenMPI.
	"reservedEnv": [
		"OMPI_MCA_orte_default_hostfile",
		"OMPI_MCA_plm_rsh_args",
		"OMPI_MCA_orte_keep_fqdn_hostnames",
		"OMPI_MCA_orte_set_default_slots",
	],
}

params := lib.params("slots-gpus", default_params)

# The rules read input.job.<field> directly: an alias rule (job := input.job)
# cost a rule evaluation per reference in every decision.

deny contains lib.violation("spec.trainer.numNodes", lib.msg_no_nodes(input.job.numNodes)) if {
	lib.mpi_job
	input.job.numNodes < 1
}

deny contains lib.violation("spec.trainer.numProcPerNode", lib.msg_no_slots(input.job.slotsPerWorker)) if {
	lib.mpi_job
	input.job.slotsPerWorker < 1
}

deny contains lib.violation("spec.trainer.numProcPerNode", lib.msg_slots_not_gpus(input.job.slotsPerWorker, input.job.gpusPerWorker)) if {
	gpu_workers
	params.mode == "equal"
	input.job.slotsPerWorker != input.job.gpusPerWorker
}

deny contains lib.violation("spec.trainer.numProcPerNode", lib.msg_slots_over_gpus(input.job.slotsPerWorker, input.job.gpusPerWorker)) if {
	gpu_workers
	params.mode == "at-most"
	input.job.slotsPerWorker > input.job.gpusPerWorker
}

deny contains lib.violation(env.field, lib.msg_reserved_env(env.name, env.field)) if {
	lib.mpi_job
	some env in input.trainJob.env
	env.name in params.reservedEnv
}

warn contains lib.violation("spec.trainer.numProcPerNode", lib.msg_slots_over_cpus(input.job.slotsPerWorker, lib.display("cpu", cpus))) if {
	lib.mpi_job
	input.job.gpusPerWorker == 0
	cpus := worker_cpu_milli
	cpus > 0
	input.job.slotsPerWorker * 1000 > cpus
}

gpu_workers if {
	lib.mpi_job
	input.job.gpusPerWorker > 0
	input.job.slotsPerWorker >= 1
}

# worker_cpu_milli is one worker pod's CPU request (requests default to limits).
worker_cpu_milli := lib.milli(input.job.workers.perPod.requests, "cpu")
