package mpiguard.lib

# violation is the shape every deny and warn rule returns: the field the user
# should change and the message (what, why with numbers, how to fix).
violation(field, msg) := {"field": field, "msg": msg}

# is_create and is_update name the admission operation being decided.
is_create if input.request.operation == "CREATE"

is_update if input.request.operation == "UPDATE"

# suspended says whether the TrainJob (or its old version) is suspended.
suspended(tj) if tj.suspend == true

# resumed is true for an UPDATE that flips spec.suspend from true to false:
# Kueue admits a workload this way, so the job is checked again as if new.
resumed if {
	is_update
	suspended(input.oldTrainJob)
	not suspended(input.trainJob)
}

# role_label names a replicated job in messages: "launcher", "workers" or its own name.
role_label(rj) := "launcher" if rj.role == "launcher"

role_label(rj) := "worker" if rj.role == "worker"

role_label(rj) := sprintf("replicated job %q", [rj.name]) if rj.role == "other"

# per_pod_milli is what one pod of a replicated job is charged for a quota key.
per_pod_milli(_, key) := 1000 if key.kind == "pods"

per_pod_milli(rj, key) := milli(rj.perPod[key.kind], key.resource) if key.kind != "pods"

# quota_key maps a ResourceQuota resource name to what pods are charged for it:
# {"kind": "pods"}, or {"kind": "requests"|"limits", "resource": name}. Names pods
# are not charged for (count/*, services, storage classes) have no key.
quota_key("pods") := {"kind": "pods"}

quota_key(res) := {"kind": "requests", "resource": trim_prefix(res, "requests.")} if startswith(res, "requests.")

quota_key(res) := {"kind": "limits", "resource": trim_prefix(res, "limits.")} if startswith(res, "limits.")

quota_key(res) := {"kind": "requests", "resource": res} if res in {"cpu", "memory", "ephemeral-storage"}

quota_key(res) := {"kind": "requests", "resource": res} if startswith(res, "hugepages-")

# key_label is how a quota key reads in a message: "nvidia.com/gpu", "cpu limits", "pods".
key_label(key) := "pods" if key.kind == "pods"

key_label(key) := key.resource if key.kind == "requests"

key_label(key) := sprintf("%s limits", [key.resource]) if key.kind == "limits"

# key_display formats a milli amount of a quota key.
key_display(key, m) := format_int(m / 1000, 10) if key.kind == "pods"

key_display(key, m) := display(key.resource, m) if key.kind != "pods"

# per_worker_label names the per-worker knob for a resource in fix suggestions.
per_worker_label(res) := "GPUs per worker" if endswith(res, "/gpu")

per_worker_label("cpu") := "CPUs per worker"

per_worker_label(res) := sprintf("%s per worker", [res]) if {
	not endswith(res, "/gpu")
	res != "cpu"
}

# mpi_job says whether the job is governed at all (the engine also skips non-MPI jobs).
mpi_job if input.job.mpi == true

# params returns a policy's parameters merged over its defaults.
params(policy, defaults) := object.union(defaults, object.get(input, ["parameters", policy], {}))

# sorted_join joins a set of strings in sorted order.
sorted_join(xs, sep) := concat(sep, sort([x | some x in xs]))
