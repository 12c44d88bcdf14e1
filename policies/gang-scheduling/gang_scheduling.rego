# gang-scheduling: a gang-scheduled job (runtime podGroupPolicy) must be able
# to start at all. The Trainer puts the whole job in one PodGroup: every pod
# starts together or none does, so a gang its scheduler can never place
# waits forever after admission.
#
# Volcano (podGroupPolicy.volcano): the PodGroup goes to the queue named by
# the annotation scheduling.volcano.sh/queue-name of the runtime's template
# metadata (a runtime patch's template metadata overrides it), else to
# Volcano's queue "default". Volcano's own admission refuses a PodGroup whose
# queue does not exist, is not Open or is not a leaf; the Trainer then keeps
# failing to create it. Its scheduler enforces a queue's spec.capability (and
# each ancestor's) only when placing pods, so a gang larger than that waits
# forever (volcano-sh/volcano#1331). What is allocated now only makes it wait:
# a warning.
#
# Coscheduling (podGroupPolicy.coscheduling): a scheduleTimeoutSeconds of 0
# gives the gang no time to gather its pods: a warning. A gang larger than a
# ResourceQuota's free room is refused by aggregate-quota.
#
# Go (internal/gang) supplies input.gang: the PodGroup as the Trainer builds
# it, the queue chain (leaf first) and, per capped resource, exact milli
# amounts: what the gang needs, the capability and what is allocated.
package mpiguard.policies.gang_scheduling

import data.mpiguard.lib

volcano := input.gang.volcano

# starting: a new job that will start, or a suspended one being resumed. A
# running job (audit) is held to capabilities only: its queue's state and
# what it has allocated (the job's own pods among it) say nothing about it.
starting if {
	lib.is_create
	not input.trainJob.suspend
}

starting if {
	input.request.operation == "UPDATE"
	input.oldTrainJob.suspend == true
	not input.trainJob.suspend
}

queue_field := "spec.runtimePatches"

# queue_source says where the queue name comes from.
queue_source := "annotation scheduling.volcano.sh/queue-name" if volcano.annotated

queue_source := "Volcano's default queue: no scheduling.volcano.sh/queue-name annotation" if not volcano.annotated

queue_fix := "name an Open leaf queue with the annotation scheduling.volcano.sh/queue-name in spec.runtimePatches[].trainingRuntimeSpec.template.metadata.annotations (or use a runtime that names one)"

deny contains lib.violation("spec.runtimeRef", msg_volcano_not_served) if {
	starting
	volcano.served == false
}

msg_volcano_not_served := sprintf(
	"runtime %s gang-schedules with Volcano (podGroupPolicy.volcano) but this cluster serves no Volcano Queue (scheduling.volcano.sh/v1beta1): Volcano is not installed, and the job's pods would never be scheduled; use a runtime without podGroupPolicy.volcano, or ask an admin to install Volcano",
	[input.runtime.name],
)

deny contains lib.violation(queue_field, msg_queue_missing(q.name)) if {
	starting
	q := volcano.queues[0]
	not q.exists
}

msg_queue_missing(name) := sprintf(
	"the job's gang goes to Volcano queue %q (%s) but no Queue of that name exists: Volcano refuses the PodGroup and the job never starts; %s, or ask an admin to create queue %q",
	[name, queue_source, queue_fix, name],
)

deny contains lib.violation(queue_field, msg_queue_not_open(q.name, q.state)) if {
	starting
	q := volcano.queues[0]
	q.exists
	q.state != "Open"
}

msg_queue_not_open(name, state) := sprintf(
	"the job's gang goes to Volcano queue %q (%s), whose state is %q: Volcano admits PodGroups only to an Open queue, so the job never starts; %s, or ask an admin to open queue %q",
	[name, queue_source, state, queue_fix, name],
)

deny contains lib.violation(queue_field, msg_queue_root) if {
	starting
	volcano.queues[0].name == "root"
}

msg_queue_root := sprintf(
	"the job's gang goes to Volcano queue \"root\" (%s), the top of the queue hierarchy, which takes no jobs: Volcano refuses the PodGroup; %s",
	[queue_source, queue_fix],
)

deny contains lib.violation(queue_field, msg_queue_not_leaf(q.name, q.children)) if {
	starting
	q := volcano.queues[0]
	q.name != "root"
	count(q.children) > 0
}

msg_queue_not_leaf(name, children) := sprintf(
	"the job's gang goes to Volcano queue %q (%s), a parent queue (spec.parent of %s): Volcano admits jobs only to leaf queues, so the job never starts; %s, e.g. %s",
	[name, queue_source, quoted(children), queue_fix, quoted(children)],
)

quoted(names) := concat(", ", [sprintf("%q", [n]) | some n in sort(names)])

# Over capability: the whole gang must fit every queue of the chain at once.
deny contains lib.violation("spec.trainer", msg_over_capability(q.name, c)) if {
	some q in volcano.queues
	some c in q.capability
	c.milli > c.capability
}

msg_over_capability(name, c) := sprintf(
	"the job's gang needs %s %s (all %d pods start together or none does) but Volcano %s can hold at most %s (spec.capability): the job would wait in the queue forever; reduce Workers or %s per Worker so the whole job needs at most %s, %s",
	[c.display, c.resource, input.gang.minMember, queue_label(name), c.capabilityDisplay, c.resource, c.capabilityDisplay, capability_fix(name)],
)

# queue_label names the queue, and how it is the job's when it is an ancestor.
queue_label(name) := sprintf("queue %q", [name]) if name == volcano.queue

queue_label(name) := sprintf("queue %q, an ancestor of the job's queue %q,", [name, volcano.queue]) if name != volcano.queue

capability_fix(name) := sprintf("use a queue with more capability, or ask an admin to raise the capability of queue %q", [name])

# Fits the capability, but not beside what is allocated now: it will wait.
warn contains lib.violation("spec.trainer", msg_waits_for_allocated(q.name, c)) if {
	starting
	some q in volcano.queues
	some c in q.capability
	c.milli <= c.capability
	c.milli > 0
	c.milli + c.allocated > c.capability
}

msg_waits_for_allocated(name, c) := sprintf(
	"Volcano %s has %s of %s %s allocated to running jobs now and the job's gang needs %s: the job will wait in the queue until that much is free (all %d pods start together or none does)",
	[queue_label(name), c.allocatedDisplay, c.capabilityDisplay, c.resource, c.display, input.gang.minMember],
)

warn contains lib.violation("spec.runtimeRef", msg_schedule_timeout(timeout)) if {
	starting
	input.gang.scheduler == "coscheduling"
	timeout := object.get(input.gang, "scheduleTimeoutSeconds", 0)
	timeout == 0
}

msg_schedule_timeout(timeout) := sprintf(
	"runtime %s gang-schedules with coscheduling and its PodGroup's scheduleTimeoutSeconds is %d (or not set): the coscheduling plugin gives the gang's %d pods no time to gather, so the pods it places are given up whenever the gang does not fit in one pass, and a large gang may never start; ask an admin to set spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds on the runtime (mpiguard's curated runtimes set 120)",
	[input.runtime.name, timeout, input.gang.minMember],
)
