# rendered-pods: a TrainJob whose pods, as the Trainer would create them, the
# apiserver would reject is denied at submit instead of being admitted and
# then hanging with no pods. Go renders the job's pods (internal/render)
# and validates them as the apiserver would: container resources (a request
# above its limit, ...), LimitRange minimums and maximums, images, env names,
# node selectors. Each reason is an entry of input.job.problems: the field,
# the kind of error and its detail, which already says why the apiserver
# rejects the pod and how to fix it.
package mpiguard.policies.rendered_pods

deny contains {"field": p.field, "msg": msg_rejected(p.detail)} if {
	some p in input.job.problems
}

msg_rejected(detail) := sprintf("the Trainer would create pods the apiserver rejects: %s", [detail])
