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

job := input.job

deny contains lib.violation("spec.trainer.numNodes", lib.msg_no_nodes(job.numNodes)) if {
	lib.mpi_job
	job.numNodes < 1
}

deny contains lib.violation("spec.trainer.numProcPerNode", lib.msg_no_slots(job.slotsPerWorker)) if {
	lib.mpi_job
	job.slotsPerWorker < 1
}

deny contains lib.violation("spec.trainer.numProcPerNode", lib.msg_slots_not_gpus(job.slotsPerWorker, job.gpusPerWorker)) if {
	gpu_workers
	params.mode == "equal"
	job.slotsPerWorker != job.gpusPerWorker
}

deny contains lib.violation("spec.trainer.numProcPerNode", lib.msg_slots_over_gpus(job.slotsPerWorker, job.gpusPerWorker)) if {
	gpu_workers
	params.mode == "at-most"
	job.slotsPerWorker > job.gpusPerWorker
}

deny contains lib.violation(env.field, lib.msg_reserved_env(env.name, env.field)) if {
	lib.mpi_job
	some env in input.trainJob.env
	env.name in params.reservedEnv
}

warn contains lib.violation("spec.trainer.numProcPerNode", lib.msg_slots_over_cpus(job.slotsPerWorker, lib.display("cpu", cpus))) if {
	lib.mpi_job
	job.gpusPerWorker == 0
	cpus := worker_cpu_milli
	cpus > 0
	job.slotsPerWorker * 1000 > cpus
}

gpu_workers if {
	lib.mpi_job
	job.gpusPerWorker > 0
	job.slotsPerWorker >= 1
}

# worker_cpu_milli is one worker pod's CPU request (requests default to limits).
worker_cpu_milli := lib.milli(job.workers.perPod.requests, "cpu")
