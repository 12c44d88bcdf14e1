package mpiguard.policies.slots_gpus_test

import data.mpiguard.policies.slots_gpus

# params are the policy's parameters as the engine passes them: complete,
# here with the schema's defaults (parameters.schema.yaml).
params := {
	"mode": "equal",
	"reservedEnv": [
		"OMPI_MCA_orte_default_hostfile",
		"OMPI_MCA_plm_rsh_args",
		"OMPI_MCA_orte_keep_fqdn_hostnames",
		"OMPI_MCA_orte_set_default_slots",
	],
}

mpi_input(num_nodes, slots, gpus, cpu_milli) := {
	"request": {"operation": "CREATE"},
	"parameters": {"slots-gpus": params},
	"trainJob": {"name": "train", "namespace": "team-a", "env": []},
	"job": {
		"mpi": true, "numNodes": num_nodes, "slotsPerWorker": slots, "gpusPerWorker": gpus,
		"workers": {"name": "node", "role": "worker", "pods": num_nodes, "perPod": {"requests": {"cpu": {"value": cpu_milli / 1000, "milli": cpu_milli, "display": ""}}}},
	},
}

test_equal_slots_gpus_allowed if {
	count(slots_gpus.deny) == 0 with input as mpi_input(2, 4, 4, 8000)
	count(slots_gpus.warn) == 0 with input as mpi_input(2, 4, 4, 8000)
}

test_slots_differ_from_gpus_denied if {
	got := slots_gpus.deny with input as mpi_input(2, 8, 4, 8000)
	got == {{
		"field": "spec.trainer.numProcPerNode",
		"msg": "each worker gets 8 MPI slots but has 4 GPUs; slots per worker must equal GPUs per worker so every rank drives exactly one GPU; set spec.trainer.numProcPerNode to 4, or request 8 GPUs per worker in spec.trainer.resourcesPerNode",
	}}
}

test_fewer_slots_than_gpus_denied_when_equal if {
	count(slots_gpus.deny) == 1 with input as mpi_input(2, 2, 4, 8000)
}

test_at_most_mode if {
	at_most := object.union(mpi_input(2, 2, 4, 8000), {"parameters": {"slots-gpus": {"mode": "at-most"}}})
	count(slots_gpus.deny) == 0 with input as at_most
	over := object.union(mpi_input(2, 8, 4, 8000), {"parameters": {"slots-gpus": {"mode": "at-most"}}})
	got := slots_gpus.deny with input as over
	got == {{
		"field": "spec.trainer.numProcPerNode",
		"msg": "each worker gets 8 MPI slots but has only 4 GPUs; slots per worker must not exceed GPUs per worker or ranks would share a GPU; set spec.trainer.numProcPerNode to 4 or less, or request 8 GPUs per worker in spec.trainer.resourcesPerNode",
	}}
}

test_zero_nodes_denied if {
	got := slots_gpus.deny with input as mpi_input(0, 1, 0, 1000)
	got == {{
		"field": "spec.trainer.numNodes",
		"msg": "TrainJob has 0 hostfile nodes (spec.trainer.numNodes) so no Worker would run; set spec.trainer.numNodes to 1 or more",
	}}
}

test_zero_slots_denied if {
	got := slots_gpus.deny with input as mpi_input(2, 0, 4, 1000)
	got == {{
		"field": "spec.trainer.numProcPerNode",
		"msg": "each worker gets 0 MPI slots (spec.trainer.numProcPerNode) so mpirun would start no rank; set spec.trainer.numProcPerNode to 1 or more",
	}}
}

test_cpu_only_oversubscribed_warns if {
	got := slots_gpus.warn with input as mpi_input(2, 8, 0, 4000)
	got == {{
		"field": "spec.trainer.numProcPerNode",
		"msg": "each CPU-only worker gets 8 MPI slots but only 4 CPUs, so ranks will share CPUs and run slower; set spec.trainer.numProcPerNode to 4 or less, or request 8 CPUs per worker in spec.trainer.resourcesPerNode",
	}}
	count(slots_gpus.deny) == 0 with input as mpi_input(2, 8, 0, 4000)
}

test_cpu_only_fitting_no_warning if {
	count(slots_gpus.warn) == 0 with input as mpi_input(2, 4, 0, 4000)
}

test_reserved_env_denied if {
	inp := object.union(mpi_input(2, 4, 4, 8000), {"trainJob": {"env": [
		{"field": "spec.trainer.env[0]", "name": "NCCL_DEBUG", "value": "INFO"},
		{"field": "spec.trainer.env[1]", "name": "OMPI_MCA_orte_default_hostfile", "value": "/tmp/h"},
	]}})
	got := slots_gpus.deny with input as inp
	got == {{
		"field": "spec.trainer.env[1]",
		"msg": "spec.trainer.env[1] sets OMPI_MCA_orte_default_hostfile, which the MPI plugin reserves: overriding it desynchronises mpirun from the hostfile the Trainer renders; remove OMPI_MCA_orte_default_hostfile from spec.trainer.env[1]",
	}}
}

test_non_mpi_ignored if {
	inp := object.union(mpi_input(0, 0, 4, 8000), {"job": {"mpi": false}})
	count(slots_gpus.deny) == 0 with input as inp
}
