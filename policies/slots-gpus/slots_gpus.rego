# slots-gpus: every MPI rank gets a GPU (slots per worker equal, or at most,
# GPUs per worker), a job has at least one node and one slot, CPU-only workers
# are warned about sharing CPUs, and user env must not override the OMPI_MCA_*
# variables the Trainer's MPI plugin sets (they would desynchronise the hostfile).
package mpiguard.policies.slots_gpus

import data.mpiguard.lib

# The parameters (defaults and meaning: parameters.schema.yaml): mode (equal:
# slots per worker == GPUs per worker; at-most: slots <= GPUs) and reservedEnv
# (the variables the Trainer's MPI plugin sets for OpenMPI).
params := input.parameters["slots-gpus"]

deny contains lib.violation("spec.trainer.numNodes", msg_no_nodes(input.job.numNodes)) if {
	lib.mpi_job
	input.job.numNodes < 1
}

msg_no_nodes(n) := sprintf(
	"TrainJob has %d hostfile nodes (spec.trainer.numNodes) so no Worker would run; set spec.trainer.numNodes to 1 or more",
	[n],
)

deny contains lib.violation("spec.trainer.numProcPerNode", msg_no_slots(input.job.slotsPerWorker)) if {
	lib.mpi_job
	input.job.slotsPerWorker < 1
}

msg_no_slots(slots) := sprintf(
	"each worker gets %d MPI slots (spec.trainer.numProcPerNode) so mpirun would start no rank; set spec.trainer.numProcPerNode to 1 or more",
	[slots],
)

deny contains lib.violation("spec.trainer.numProcPerNode", msg_slots_not_gpus(input.job.slotsPerWorker, input.job.gpusPerWorker)) if {
	gpu_workers
	params.mode == "equal"
	input.job.slotsPerWorker != input.job.gpusPerWorker
}

msg_slots_not_gpus(slots, gpus) := sprintf(
	"each worker gets %d MPI slots but has %d GPUs; slots per worker must equal GPUs per worker so every rank drives exactly one GPU; set spec.trainer.numProcPerNode to %d, or request %d GPUs per worker in spec.trainer.resourcesPerNode",
	[slots, gpus, gpus, slots],
)

deny contains lib.violation("spec.trainer.numProcPerNode", msg_slots_over_gpus(input.job.slotsPerWorker, input.job.gpusPerWorker)) if {
	gpu_workers
	params.mode == "at-most"
	input.job.slotsPerWorker > input.job.gpusPerWorker
}

msg_slots_over_gpus(slots, gpus) := sprintf(
	"each worker gets %d MPI slots but has only %d GPUs; slots per worker must not exceed GPUs per worker or ranks would share a GPU; set spec.trainer.numProcPerNode to %d or less, or request %d GPUs per worker in spec.trainer.resourcesPerNode",
	[slots, gpus, gpus, slots],
)

deny contains lib.violation(env.field, msg_reserved_env(env.name, env.field)) if {
	lib.mpi_job
	some env in input.trainJob.env
	env.name in params.reservedEnv
}

msg_reserved_env(name, field) := sprintf(
	"%s sets %s, which the MPI plugin reserves: overriding it desynchronises mpirun from the hostfile the Trainer renders; remove %s from %s",
	[field, name, name, field],
)

warn contains lib.violation("spec.trainer.numProcPerNode", msg_slots_over_cpus(input.job.slotsPerWorker, lib.display("cpu", cpus))) if {
	lib.mpi_job
	input.job.gpusPerWorker == 0
	cpus := worker_cpu_milli
	cpus > 0
	input.job.slotsPerWorker * 1000 > cpus
}

msg_slots_over_cpus(slots, cpus) := sprintf(
	"each CPU-only worker gets %d MPI slots but only %s CPUs, so ranks will share CPUs and run slower; set spec.trainer.numProcPerNode to %s or less, or request %d CPUs per worker in spec.trainer.resourcesPerNode",
	[slots, cpus, cpus, slots],
)

gpu_workers if {
	lib.mpi_job
	input.job.gpusPerWorker > 0
	input.job.slotsPerWorker >= 1
}

# worker_cpu_milli is one worker pod's CPU request (requests default to limits).
worker_cpu_milli := lib.milli(input.job.workers.perPod.requests, "cpu")
