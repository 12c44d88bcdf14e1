# Package lib holds what several mpiguard policies share: the shape of a
# violation, the admission operation, whether a job is governed, how a
# replicated job is named in messages (here) and exact quantity arithmetic and
# display (quantity.rego). Each policy's messages are in the policy itself.
package mpiguard.lib

# violation is the shape every deny and warn rule returns: the field the user
# should change and the message (what, why with numbers, how to fix).
violation(field, msg) := {"field": field, "msg": msg}

# is_create says the admission operation being decided is a CREATE.
is_create if input.request.operation == "CREATE"

# mpi_job says whether the job is governed at all (the engine also skips non-MPI jobs).
mpi_job if input.job.mpi == true

# role_label names a replicated job in messages: "launcher", "worker" or
# `replicated job "<name>"`.
role_label(rj) := "launcher" if rj.role == "launcher"

role_label(rj) := "worker" if rj.role == "worker"

role_label(rj) := sprintf("replicated job %q", [rj.name]) if rj.role == "other"
