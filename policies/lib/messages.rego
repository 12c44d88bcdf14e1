package mpiguard.lib

# Every message mpiguard's policies return is built here: what was violated,
# why (with the numbers), and how to fix it.

# fix_text joins reductions ("workers to 1") and always offers the admin route last.
fix_text(fixes, admin) := sprintf("reduce %s, or %s", [concat(" or ", fixes), admin]) if count(fixes) > 0

fix_text(fixes, admin) := admin if count(fixes) == 0

# aggregate-quota

msg_quota_exceeded(quota, demand, breakdown, fixes) := sprintf(
	"TrainJob needs %s %s (%s) but ResourceQuota %q has %s of %s free%s; %s",
	[
		demand.display, demand_label(demand), breakdown, quota,
		demand.freeDisplay, demand.hardDisplay, quota_held(demand),
		fix_text(fixes, "ask an admin to raise the quota"),
	],
)

# quota_held says what holds a quota resource when admitted TrainJobs whose
# pods do not exist yet hold some of it: status.used alone would not explain
# the free amount.
quota_held(demand) := "" if count(demand.heldBy) == 0

quota_held(demand) := sprintf(
	" (%s used by running pods, %s held by TrainJobs admitted whose pods do not exist yet: %s)",
	[demand.usedDisplay, demand.heldDisplay, holders_text(demand.heldBy)],
) if count(demand.heldBy) > 0

# max_named_holders is how many holders a message names; the rest are counted.
max_named_holders := 3

# holders_text names the first holders with their amounts: "team-a/job-1 8, team-a/job-2 4 and 2 more".
holders_text(by) := concat(", ", named_holders(by)) if count(by) <= max_named_holders

holders_text(by) := sprintf("%s and %d more", [concat(", ", named_holders(by)), count(by) - max_named_holders]) if {
	count(by) > max_named_holders
}

named_holders(by) := [sprintf("%s %s", [h.trainJob, h.display]) | some i, h in by; i < max_named_holders]

msg_quota_undeclared(quota, res, demand, part) := sprintf(
	"ResourceQuota %q limits %s, so every container must declare a %s %s, but the %s pods have a container without one; set resources.%s.%s on every container of replicated job %q, or ask an admin to add a LimitRange default",
	[quota, res, demand.resource, trim_suffix(demand.kind, "s"), role_label(part), demand.kind, demand.resource, part.name],
)

# slots-gpus

msg_no_nodes(n) := sprintf(
	"TrainJob has %d nodes (spec.trainer.numNodes) so no worker would run; set spec.trainer.numNodes to 1 or more",
	[n],
)

msg_no_slots(slots) := sprintf(
	"each worker gets %d MPI slots (spec.trainer.numProcPerNode) so mpirun would start no rank; set spec.trainer.numProcPerNode to 1 or more",
	[slots],
)

msg_slots_not_gpus(slots, gpus) := sprintf(
	"each worker gets %d MPI slots but has %d GPUs; slots per worker must equal GPUs per worker so every rank drives exactly one GPU; set spec.trainer.numProcPerNode to %d, or request %d GPUs per worker in spec.trainer.resourcesPerNode",
	[slots, gpus, gpus, slots],
)

msg_slots_over_gpus(slots, gpus) := sprintf(
	"each worker gets %d MPI slots but has only %d GPUs; slots per worker must not exceed GPUs per worker or ranks would share a GPU; set spec.trainer.numProcPerNode to %d or less, or request %d GPUs per worker in spec.trainer.resourcesPerNode",
	[slots, gpus, gpus, slots],
)

msg_slots_over_cpus(slots, cpus) := sprintf(
	"each CPU-only worker gets %d MPI slots but only %s CPUs, so ranks will share CPUs and run slower; set spec.trainer.numProcPerNode to %s or less, or request %d CPUs per worker in spec.trainer.resourcesPerNode",
	[slots, cpus, cpus, slots],
)

msg_reserved_env(name, field) := sprintf(
	"%s sets %s, which the MPI plugin reserves: overriding it desynchronises mpirun from the hostfile the Trainer renders; remove %s from %s",
	[field, name, name, field],
)

# max-duration

msg_over_max_duration(seconds, limit_seconds, source) := sprintf(
	"TrainJob may run for %s (spec.activeDeadlineSeconds %d) but %s allows at most %s; set spec.activeDeadlineSeconds to %d (%s) or less, or ask an admin to raise the limit",
	[hours(seconds), seconds, source, hours(limit_seconds), limit_seconds, hours(limit_seconds)],
)

msg_no_duration(limit_seconds, source) := sprintf(
	"TrainJob has no spec.activeDeadlineSeconds, so it may run forever, but %s allows at most %s; set spec.activeDeadlineSeconds to %d (%s) or less",
	[source, hours(limit_seconds), limit_seconds, hours(limit_seconds)],
)

# hours shows a number of seconds in hours: "1 hour", "24 hours", "1.5 hours".
hours(3600) := "1 hour"

hours(seconds) := sprintf("%d hours", [seconds / 3600]) if {
	seconds != 3600
	seconds % 3600 == 0
}

hours(seconds) := sprintf("%.1f hours", [seconds / 3600]) if seconds % 3600 != 0

msg_bad_duration_annotation(ns, annotation, value) := sprintf(
	"namespace %q has annotation %s=%q, which is not a positive number of hours (at least 1 second), so mpiguard cannot tell how long TrainJobs may run; ask an admin to fix the annotation",
	[ns, annotation, value],
)

# data-residency

msg_unknown_zone(ns, label, zone) := sprintf(
	"namespace %q is labelled %s=%q but no such data residency zone is configured, so mpiguard cannot tell where its pods may run; ask an admin to add zone %q to the data-residency parameters or fix the label",
	[ns, label, zone, zone],
)

msg_not_restricted(role, name, zone, node_label, allowed, why) := sprintf(
	"pods of %s may run outside data residency zone %q: %s; restrict them to %s in {%s} (remove selectors and required affinity for other values)",
	[role_label({"role": role, "name": name}), zone, why, node_label, concat(", ", allowed)],
)

# istio-opt-out

msg_istio_opt_in(rj, where, key, value) := sprintf(
	"pods of %s opt in to the Istio mesh (%s %s=%q); MPI traffic between launcher and workers breaks behind a sidecar or ambient proxy; remove %s from the pod template, or ask an admin to exempt the namespace",
	[role_label(rj), where, key, value, key],
)

# runtime-constraints (worded as runtimes/constraints.Check)

msg_constraint_malformed(kind, runtime, err) := sprintf(
	"%s %s has a malformed constraint annotation (%s), so mpiguard cannot tell which TrainJobs the runtime allows; a cluster admin must fix the annotation on the runtime (see docs/runtimes.md), or use another runtime",
	[kind, runtime, err],
)

msg_namespace_not_allowed(runtime, allowed, ns) := sprintf(
	"runtime %s may only be used from namespaces %s, and this TrainJob is in %q; use another runtime or ask a cluster admin to allow the namespace (mpiguard.io/allowed-namespaces)",
	[runtime, concat(", ", allowed), ns],
)

msg_too_many_workers(workers, runtime, max) := sprintf(
	"TrainJob asks for %d Workers but runtime %s allows at most %d per TrainJob (mpiguard.io/max-workers); lower spec.trainer.numNodes to %d or less",
	[workers, runtime, max, max],
)

msg_too_many_gpus(gpus, runtime, max) := sprintf(
	"TrainJob gives each Worker %d GPUs but runtime %s allows at most %d per Worker (mpiguard.io/max-gpus-per-worker); request %d or fewer GPUs per node in spec.trainer.resourcesPerNode and add Workers instead",
	[gpus, runtime, max, max],
)

msg_not_pinned(rj, missing, runtime) := sprintf(
	"the %s pods are not pinned to nodes labelled %s, which runtime %s requires (mpiguard.io/required-node-labels); add them to the pods' nodeSelector with spec.runtimePatches, or ask a cluster admin to pin the runtime's pods",
	[role_label(rj), sorted_join(missing, ", "), runtime],
)

# mpiguard-entry

msg_entry_foreign(field, manager, paths) := sprintf(
	"%s has manager %s, which is reserved for mpiguard's own entry, but sets %s, which mpiguard never writes (it writes only pod template labels, annotations, node selector and required node affinity); an entry under mpiguard's name is trusted as mpiguard's work, so it must not carry anything else; remove the runtimePatches entry with manager %s or give it a manager of your own; mpiguard writes its entry itself",
	[field, manager, some_paths(paths), manager],
)

msg_entry_differs(field, manager, paths) := sprintf(
	"%s has manager %s, which is reserved for mpiguard's own entry, but is not mpiguard's entry for this TrainJob (it differs at %s); an entry under mpiguard's name is trusted as mpiguard's work, so it must be exactly that; remove the runtimePatches entry with manager %s or give it a manager of your own; mpiguard writes its entry itself",
	[field, manager, some_paths(paths), manager],
)

msg_entry_unwanted(field, manager) := sprintf(
	"%s has manager %s, which is reserved for mpiguard's own entry, but mpiguard writes no such entry for this TrainJob (no policy changes its pod templates here, or this is a second entry); an entry under mpiguard's name is trusted as mpiguard's work; remove the runtimePatches entry with manager %s or give it a manager of your own; mpiguard writes its entry itself when it needs one",
	[field, manager, manager],
)

# some_paths names the first field paths of a list and counts the rest.
max_named_paths := 3

some_paths(paths) := concat(", ", paths) if count(paths) <= max_named_paths

some_paths(paths) := sprintf("%s and %d more", [concat(", ", array.slice(paths, 0, max_named_paths)), count(paths) - max_named_paths]) if {
	count(paths) > max_named_paths
}
