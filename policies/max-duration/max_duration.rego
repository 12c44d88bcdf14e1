# max-duration: every TrainJob gets a deadline. Mutate: set
# spec.activeDeadlineSeconds on CREATE when absent (cluster default). Validate:
# deny a deadline above the ceiling (cluster default, or the namespace's own
# limit from an admin-set annotation, which may lower or raise it) on CREATE,
# on an UPDATE that sets or changes it, and when a suspended job is resumed;
# deny an UPDATE that removes it.
#
# spec.activeDeadlineSeconds is immutable, but the CRD's rule (self ==
# oldSelf) does not fire when the stored job has none (an update may add one
# of any size) or when an update removes it (a client compiled against a
# TrainJob type without the field, as every Kueue release targeting Trainer
# v2.0/v2.1 is, writes objects without it). The mutating pass puts a removed
# deadline back from the stored object (internal/pipeline, restore.go), so the
# removal rule here only catches an update that lost it after mpiguard's
# mutation. A resume is judged because the deadline counts from it, and
# because an UPDATE of a job that stays suspended is only warned about until
# then (internal/pipeline, deferDenials).
package mpiguard.policies.max_duration

import data.mpiguard.lib

# The parameters (defaults and meaning: parameters.schema.yaml): defaultHours
# (the deadline set when a TrainJob has none), maxHours (the cluster ceiling)
# and namespaceAnnotation (where admins state a namespace's own limit).
params := input.parameters["max-duration"]

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

# default_seconds is the deadline set on a TrainJob without one: the cluster
# default, but never above the ceiling. (input.trainJob.activeDeadlineSeconds
# is 0 when unset.)
default_seconds := min([round(params.defaultHours * 3600), limit_seconds])

mutate contains {"target": "trainJob", "field": "spec.activeDeadlineSeconds", "value": default_seconds} if {
	lib.mpi_job
	lib.is_create
	input.trainJob.activeDeadlineSeconds == 0
}

# is_update: the admission operation being decided is an UPDATE.
is_update if input.request.operation == "UPDATE"

# deadline_changed: an UPDATE that sets, changes or removes the deadline.
deadline_changed if {
	is_update
	input.trainJob.activeDeadlineSeconds != input.oldTrainJob.activeDeadlineSeconds
}

# resumed: an UPDATE that resumes a suspended job (Kueue admits so).
resumed if {
	is_update
	input.oldTrainJob.suspend == true
	input.trainJob.suspend == false
}

# deadline_written: the request writes the deadline: a CREATE, or an UPDATE
# that sets or changes it.
deadline_written if lib.is_create

deadline_written if deadline_changed

# deadline_decided: the request decides how long the job may run: it writes
# the deadline, or resumes the job. An UPDATE that keeps the stored deadline
# of a job that does not start now is not judged again: a ceiling lowered
# since admission must not block a running job's other updates.
deadline_decided if deadline_written

deadline_decided if resumed

deny contains lib.violation("spec.activeDeadlineSeconds", msg_over_max_duration(input.trainJob.activeDeadlineSeconds, limit_seconds, limit_source)) if {
	lib.mpi_job
	deadline_written
	input.trainJob.activeDeadlineSeconds > limit_seconds
}

# A resume keeping a deadline above a ceiling lowered since it was stored:
# the deadline can no longer be changed, so the fix differs.
deny contains lib.violation("spec.activeDeadlineSeconds", msg_stored_over_max_duration(input.trainJob.activeDeadlineSeconds, limit_seconds, limit_source)) if {
	lib.mpi_job
	resumed
	not deadline_changed
	input.trainJob.activeDeadlineSeconds > limit_seconds
}

msg_stored_over_max_duration(seconds, limit_seconds, source) := sprintf(
	"TrainJob may run for %s from its resume (spec.activeDeadlineSeconds %d) but %s allows at most %s; spec.activeDeadlineSeconds cannot change once set, so recreate the TrainJob with spec.activeDeadlineSeconds %d (%s) or less, or ask an admin to raise the limit",
	[hours(seconds), seconds, source, hours(limit_seconds), limit_seconds, hours(limit_seconds)],
)

msg_over_max_duration(seconds, limit_seconds, source) := sprintf(
	"TrainJob may run for %s (spec.activeDeadlineSeconds %d) but %s allows at most %s; set spec.activeDeadlineSeconds to %d (%s) or less, or ask an admin to raise the limit",
	[hours(seconds), seconds, source, hours(limit_seconds), limit_seconds, hours(limit_seconds)],
)

deny contains lib.violation("spec.activeDeadlineSeconds", msg_no_duration(limit_seconds, limit_source)) if {
	lib.mpi_job
	lib.is_create
	input.trainJob.activeDeadlineSeconds == 0
}

msg_no_duration(limit_seconds, source) := sprintf(
	"TrainJob has no spec.activeDeadlineSeconds, so it may run forever, but %s allows at most %s; set spec.activeDeadlineSeconds to %d (%s) or less",
	[source, hours(limit_seconds), limit_seconds, hours(limit_seconds)],
)

# An update that removes the deadline the job was stored with.
deny contains lib.violation("spec.activeDeadlineSeconds", msg_deadline_removed(input.oldTrainJob.activeDeadlineSeconds)) if {
	lib.mpi_job
	is_update
	input.trainJob.activeDeadlineSeconds == 0
	input.oldTrainJob.activeDeadlineSeconds > 0
}

msg_deadline_removed(stored) := sprintf(
	"the update removes spec.activeDeadlineSeconds (stored: %d, %s), which cannot change once set; keep spec.activeDeadlineSeconds %d in the object you write (a client built against a TrainJob type without the field drops it: use one that knows it, or patch only the fields you change)",
	[stored, hours(stored), stored],
)

deny contains lib.violation("metadata.namespace", msg_bad_duration_annotation(ns.name, params.namespaceAnnotation, annotation_value)) if {
	lib.mpi_job
	deadline_decided
	annotation_value
	not valid_annotation
}

msg_bad_duration_annotation(ns, annotation, value) := sprintf(
	"namespace %q has annotation %s=%q, which is not a positive number of hours (at least 1 second), so mpiguard cannot tell how long TrainJobs may run; ask an admin to fix the annotation",
	[ns, annotation, value],
)

# hours shows a number of seconds in hours: "1 hour", "24 hours", "1.5 hours".
hours(3600) := "1 hour"

hours(seconds) := sprintf("%d hours", [seconds / 3600]) if {
	seconds != 3600
	seconds % 3600 == 0
}

hours(seconds) := sprintf("%.1f hours", [seconds / 3600]) if seconds % 3600 != 0
