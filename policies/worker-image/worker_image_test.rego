package mpiguard.policies.worker_image_test

import data.mpiguard.policies.worker_image

job_input(image, worker_image) := {
	"request": {"operation": "CREATE"},
	"trainJob": object.union({"name": "train", "namespace": "team-a"}, image),
	"runtime": {"name": "mpiguard-openmpi"},
	"job": {"mpi": true, "replicatedJobs": [
		{"name": "node", "role": "worker", "images": {"node": worker_image}},
		{"name": "launcher", "role": "launcher", "images": {"node": "registry.example.com/team-a/train:v3"}},
	]},
}

test_no_image_no_warning if {
	count(worker_image.warn) == 0 with input as job_input({}, "docker.io/mpioperator/openmpi:v0.6.0")
}

test_image_the_workers_run_no_warning if {
	doc := job_input({"image": "docker.io/mpioperator/openmpi:v0.6.0"}, "docker.io/mpioperator/openmpi:v0.6.0")
	count(worker_image.warn) == 0 with input as doc
}

test_image_only_the_launcher_runs_warns_naming_the_workers_image if {
	doc := job_input({"image": "registry.example.com/team-a/train:v3"}, "docker.io/mpioperator/openmpi:v0.6.0")
	got := worker_image.warn with input as doc
	got == {{
		"field": "spec.trainer.image",
		"msg": `the Workers will not run image "registry.example.com/team-a/train:v3": the Trainer sets spec.trainer.image only on the runtime's replicated job labelled trainer.kubeflow.org/trainjob-ancestor-step: trainer, and in runtime mpiguard-openmpi the Workers (replicated job "node") keep image "docker.io/mpioperator/openmpi:v0.6.0", so MPI ranks started there cannot find what your image adds; ask a cluster admin for a runtime whose Workers run your image (docs/runtimes.md, "A runtime for your own image"), or leave spec.trainer.image out to run the runtime's image everywhere`,
	}}
}

test_runtime_without_workers_no_warning if {
	doc := {
		"request": {"operation": "CREATE"},
		"trainJob": {"name": "train", "namespace": "team-a", "image": "x"},
		"runtime": {"name": "r"},
		"job": {"mpi": true, "replicatedJobs": [{"name": "launcher", "role": "launcher", "images": {"node": "x"}}]},
	}
	count(worker_image.warn) == 0 with input as doc
}
