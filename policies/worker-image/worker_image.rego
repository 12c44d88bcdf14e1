# worker-image: tells a user whose spec.trainer.image the Workers will not run.
# The Trainer (v2.3, pkg/runtime/framework/plugins/jobset/builder.go,
# Builder.Trainer) sets spec.trainer.image (with command and args) only on the
# replicated job labelled trainer.kubeflow.org/trainjob-ancestor-step:
# trainer. In the MPI layout of every curated runtime that is the launcher: the
# Workers keep the runtime's image, and MPI ranks started there cannot find
# what the user's image adds. A warning, not a denial: an image equal in
# content to the Workers' (a retag, a digest) is fine, and only the user knows.
package mpiguard.policies.worker_image

import data.mpiguard.lib

warn contains lib.violation("spec.trainer.image", msg_workers_keep_their_image(input.trainJob.image, image)) if {
	lib.mpi_job
	some image in {rj.images.node |
		some rj in input.job.replicatedJobs
		rj.role == "worker"
	}
	image != input.trainJob.image
}

msg_workers_keep_their_image(asked, image) := sprintf(
	"the Workers will not run image %q: the Trainer sets spec.trainer.image only on the runtime's replicated job labelled trainer.kubeflow.org/trainjob-ancestor-step: trainer, and in runtime %s the Workers (replicated job \"node\") keep image %q, so MPI ranks started there cannot find what your image adds; ask a cluster admin for a runtime whose Workers run your image (docs/runtimes.md, \"A runtime for your own image\"), or leave spec.trainer.image out to run the runtime's image everywhere",
	[asked, input.runtime.name, image],
)
