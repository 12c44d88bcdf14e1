package mpiguard.lib

# violation is the shape every deny and warn rule returns: the field the user
# should change and the message (what, why with numbers, how to fix).
violation(field, msg) := {"field": field, "msg": msg}

# is_create and is_update name the admission operation being decided.
is_create if input.request.operation == "CREATE"

is_update if input.request.operation == "UPDATE"

# suspended and was_suspended say whether the TrainJob (and its stored
# version, on UPDATE) is suspended.
suspended if input.trainJob.suspend == true

was_suspended if input.oldTrainJob.suspend == true

# resumed is true for an UPDATE that flips spec.suspend from true to false:
# Kueue admits a workload this way, so the job is checked again as if new.
resumed if {
	is_update
	was_suspended
	not suspended
}

# role_label names a replicated job in messages: "launcher", "workers" or its own name.
role_label(rj) := "launcher" if rj.role == "launcher"

role_label(rj) := "worker" if rj.role == "worker"

role_label(rj) := sprintf("replicated job %q", [rj.name]) if rj.role == "other"

# demand_label is how a quota demand reads in a message: "nvidia.com/gpu", "cpu limits", "pods".
demand_label(d) := "pods" if d.kind == "pods"

demand_label(d) := d.resource if d.kind == "requests"

demand_label(d) := sprintf("%s limits", [d.resource]) if d.kind == "limits"

# demand_display formats a milli amount of a quota demand (Go supplies the
# displays of the amounts it computes: demand.display, freeDisplay, ...).
demand_display(d, m) := display(object.get(d, "resource", ""), m)

# per_worker_label names the per-worker knob for a resource in fix suggestions.
per_worker_label(res) := "GPUs per worker" if endswith(res, "/gpu")

per_worker_label("cpu") := "CPUs per worker"

per_worker_label(res) := sprintf("%s per worker", [res]) if {
	not endswith(res, "/gpu")
	res != "cpu"
}

# mpi_job says whether the job is governed at all (the engine also skips non-MPI jobs).
mpi_job if input.job.mpi == true

# params returns a policy's parameters merged over its defaults. (It reads
# input.parameters[policy] by reference: passing input itself to a builtin
# would copy the whole input document.)
params(policy, defaults) := object.union(defaults, p) if {
	p := input.parameters[policy]
} else := defaults

# sorted_join joins a set of strings in sorted order.
sorted_join(xs, sep) := concat(sep, sort([x | some x in xs]))
