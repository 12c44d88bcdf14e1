# max-duration: every TrainJob gets a deadline. Mutate: set
# spec.activeDeadlineSeconds on CREATE when absent (cluster default). Validate:
# deny a deadline above the ceiling (cluster default, or the namespace's own
# limit from an admin-set annotation, which may lower or raise it).
# spec.activeDeadlineSeconds is immutable, so only CREATE is checked.
package mpiguard.policies.max_duration

import data.mpiguard.lib

default_params := {
	"defaultHours": 24,
	"maxHours": 168,
	"namespaceAnnotation": "mpiguard.io/max-duration-hours",
}

params := lib.params("max-duration", default_params)

ns := input.namespace

annotation_value := ns.annotations[params.namespaceAnnotation]

# valid_annotation: a number of hours that is at least one second. Less
# ("0.0001") would round to a limit of 0 seconds, and the default deadline
# set from it would be 0, which the TrainJob API refuses.
valid_annotation if {
	regex.match(`^[0-9]+(\.[0-9]+)?$`, annotation_value)
	round(to_number(annotation_value) * 3600) >= 1
}

# limit_seconds and limit_source: the namespace annotation wins over the cluster ceiling.
limit_seconds := round(to_number(annotation_value) * 3600) if valid_annotation

else := round(params.maxHours * 3600)

limit_source := sprintf("namespace %q (annotation %s)", [ns.name, params.namespaceAnnotation]) if valid_annotation

else := "the cluster"

# The rules read input.trainJob.activeDeadlineSeconds (0 when unset) directly:
# an alias rule cost a rule evaluation per reference in every decision.

default_seconds := min([round(params.defaultHours * 3600), limit_seconds])

mutate contains {"target": "trainJob", "field": "spec.activeDeadlineSeconds", "value": default_seconds} if {
	lib.mpi_job
	lib.is_create
	input.trainJob.activeDeadlineSeconds == 0
}

deny contains lib.violation("spec.activeDeadlineSeconds", lib.msg_over_max_duration(input.trainJob.activeDeadlineSeconds, limit_seconds, limit_source)) if {
	lib.mpi_job
	lib.is_create
	input.trainJob.activeDeadlineSeconds > limit_seconds
}

deny contains lib.violation("spec.activeDeadlineSeconds", lib.msg_no_duration(limit_seconds, limit_source)) if {
	lib.mpi_job
	lib.is_create
	input.trainJob.activeDeadlineSeconds == 0
}

deny contains lib.violation("metadata.namespace", lib.msg_bad_duration_annotation(ns.name, params.namespaceAnnotation, annotation_value)) if {
	lib.mpi_job
	lib.is_create
	annotation_value
	not valid_annotation
}
