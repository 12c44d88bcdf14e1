# object-quota: the objects the Trainer and the JobSet controller create for
# a job besides its pods (its JobSet, one Job per replica of each replicated
# job, the JobSet's headless Service, the MPI SSH Secret, the hostfile and
# runtime snapshot ConfigMaps, a gang's PodGroup) must fit every
# ResourceQuota that counts them: count/<resource>.<group>, or the legacy
# configmaps, secrets, services, persistentvolumeclaims. Otherwise the job
# is admitted and its creator is refused part-way (the Launcher's Job made,
# the Workers' refused): the half-started job quotas on pods already guard
# against.
#
# Go (internal/quota) supplies input.job.objects: created, what the job
# creates (kind, creator, how many, how many exist already and are not
# created again), and quotas, per quota name that counts such objects, what
# the job needs of it and the quota's hard, used and held amounts, exact
# integers of milli units with their displays. This policy compares them
# and words the denial, where an auditor reads it.
package mpiguard.policies.object_quota

import data.mpiguard.lib

# checked: a new job that will start, or a suspended job being resumed, as
# aggregate-quota: what a resume still creates is what does not exist yet
# (a job created suspended has most of its objects already).
checked if {
	lib.is_create
	not suspended
}

checked if {
	input.request.operation == "UPDATE"
	input.oldTrainJob.suspend == true
	not suspended
}

suspended if input.trainJob.suspend == true

# free is what the quota has left for this job's objects: its hard limit,
# less what exists (status.used) and what admitted TrainJobs whose objects do
# not exist yet hold.
free(q) := (q.hard - q.used) - q.held

deny contains lib.violation("spec.runtimeRef", msg_objects_exceeded(q)) if {
	checked
	some q in input.job.objects.quotas
	q.milli > 0
	q.milli > free(q)
}

# msg_objects_exceeded reads, e.g.: TrainJob creates 2 Jobs counted by
# count/jobs.batch (the JobSet controller creates one Job per replica of each
# replicated job: node 1, launcher 1) but ResourceQuota "team-a" has 1 of 1
# free; ask an admin to raise count/jobs.batch in ResourceQuota "team-a" to
# at least 2, or delete Jobs namespace team-a no longer needs. The arguments
# are, in order: how many of what, the quota name, who creates them; the
# quota, what it has free of its hard limit (and what holds the rest); the
# fix.
msg_objects_exceeded(q) := sprintf(
	"TrainJob creates %s %s counted by %s (%s) but ResourceQuota %q has %s of %s free%s; ask an admin to raise %s in ResourceQuota %q to at least %s, or delete %s namespace %s no longer needs",
	[
		q.display, kind_word(q), q.name, creators_text(q), q.quota,
		lib.display("", free(q)), q.hardDisplay, held_text(q),
		q.name, q.quota, lib.display("", (q.used + q.held) + q.milli), kinds(q), input.trainJob.namespace,
	],
)

# created is what the job creates that quota name q counts and is not there yet.
created(q) := [c |
	some i in q.created
	c := input.job.objects.created[i]
	c.charged > 0
]

# kinds names what q counts, in the plural: "Jobs", "ConfigMaps".
kinds(q) := sprintf("%ss", [created(q)[0].kind])

# kind_word is kinds(q), in the singular for one: "1 ConfigMap".
kind_word(q) := created(q)[0].kind if q.milli == 1000

kind_word(q) := kinds(q) if q.milli != 1000

# creators_text says who creates them: "the JobSet controller creates one Job
# per replica of each replicated job: node 1, launcher 1", "the Trainer
# creates resnet-runtime-snapshot, resnet-mpi-hostfile".
creators_text(q) := concat("; ", [creator_text(who, q) | some who in {c.creator | some c in created(q)}])

creator_text(who, q) := sprintf("%s creates one Job per replica of each replicated job: %s", [creator_name(who), concat(", ", items)]) if {
	items := [sprintf("%s %d", [c.replicatedJob, c.charged]) | some c in created(q); c.creator == who; c.replicatedJob != ""]
	count(items) > 0
}

creator_text(who, q) := sprintf("%s creates %s", [creator_name(who), concat(", ", names)]) if {
	names := [n | some c in created(q); c.creator == who; c.replicatedJob == ""; some n in c.names]
	count(names) > 0
}

creator_name("Trainer") := "the Trainer"

creator_name("JobSet") := "the JobSet controller"

# held_text says what holds the quota when admitted TrainJobs whose objects
# do not exist yet hold some of it: status.used alone would not explain the
# free amount.
held_text(q) := "" if count(q.heldBy) == 0

held_text(q) := sprintf(
	" (%s exist, %s held by TrainJobs admitted whose objects do not exist yet: %s%s)",
	[q.usedDisplay, q.heldDisplay, concat(", ", [sprintf("%s %s", [h.trainJob, h.display]) | some h in array.slice(q.heldBy, 0, 3)]), more_holders(q)],
) if count(q.heldBy) > 0

# more_holders counts the holders a message does not name.
more_holders(q) := sprintf(" and %d more", [count(q.heldBy) - 3]) if count(q.heldBy) > 3

more_holders(q) := "" if count(q.heldBy) <= 3
