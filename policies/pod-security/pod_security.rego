# pod-security: a TrainJob whose pods, as the Trainer would create them, Pod
# Security admission would refuse is denied at submit instead of being
# admitted and then hanging with no pods (the refusal only shows as a
# FailedCreate event on a Job). Go (internal/podsecurity) reads the
# namespace's pod-security.kubernetes.io/<mode>[-version] labels and judges
# every rendered pod with the apiserver's own checks
# (k8s.io/pod-security-admission): input.job.podSecurity holds, per mode, the
# level, the version and each failed check with the library's reason and
# detail and what to change. The enforced level denies; the warn and audit
# levels become admission warnings.
package mpiguard.policies.pod_security

import data.mpiguard.lib

ps := input.job.podSecurity

namespace := input.namespace.name

# One denial per pod template, every failed check in it, as the apiserver
# words its own refusal.
deny contains lib.violation(field, msg_enforced(field, ps.enforce)) if {
	lib.mpi_job
	some field in fields(ps.enforce)
}

msg_enforced(field, mode) := sprintf(
	"pods of %s would violate PodSecurity %q, which namespace %s enforces (label pod-security.kubernetes.io/enforce): the apiserver would refuse them, and the TrainJob would never start; %s; failed checks: %s",
	[who(field, mode), mode.policy, namespace, how_to_fix(field, mode), reasons(field, mode)],
)

# The apiserver adds no warnings to a pod it refuses: neither does this.
warn contains lib.violation(field, msg_warned(field, ps.warn)) if {
	lib.mpi_job
	count(ps.enforce.violations) == 0
	some field in fields(ps.warn)
}

msg_warned(field, mode) := sprintf(
	"pods of %s would violate PodSecurity %q, which namespace %s warns about (label pod-security.kubernetes.io/warn): created here, refused where the level is enforced; %s; failed checks: %s",
	[who(field, mode), mode.policy, namespace, how_to_fix(field, mode), reasons(field, mode)],
)

# An audit level equal to the warn level would repeat the same warning.
warn contains lib.violation(field, msg_audited(field, ps.audit)) if {
	lib.mpi_job
	count(ps.enforce.violations) == 0
	ps.audit.policy != ps.warn.policy
	some field in fields(ps.audit)
}

msg_audited(field, mode) := sprintf(
	"pods of %s would violate PodSecurity %q, which namespace %s audits (label pod-security.kubernetes.io/audit): created, and recorded in the apiserver's audit log; %s; failed checks: %s",
	[who(field, mode), mode.policy, namespace, how_to_fix(field, mode), reasons(field, mode)],
)

warn contains lib.violation("metadata.namespace", msg_malformed_label(err)) if {
	lib.mpi_job
	some err in ps.errors
}

msg_malformed_label(err) := sprintf(
	"namespace %s has a malformed Pod Security label (%s): the apiserver then enforces \"restricted\" for a malformed enforce level, ignores a malformed warn or audit level and reads a malformed version as \"latest\", and mpiguard predicts the same; ask a cluster admin to fix the label",
	[namespace, err],
)

# fields are the pod specs (one per replicated job) that fail the mode.
fields(mode) := {v.field | some v in mode.violations}

# who names the replicated job of a pod spec: "the launcher (replicated job
# "launcher")", "the Workers (replicated job "node")", or the replicated job.
who(field, mode) := sprintf("the %s (replicated job %q)", [role_name[v.role], v.replicatedJob]) if {
	some v in mode.violations
	v.field == field
	role_name[v.role]
} else := sprintf("replicated job %q", [v.replicatedJob]) if {
	some v in mode.violations
	v.field == field
}

role_name := {"launcher": "Launcher", "worker": "Workers"}

# reasons names the failed checks of one pod spec as the apiserver does
# ("allowPrivilegeEscalation != false, seccompProfile"), without the
# apiserver's per-container detail, which the fixes say for every container:
# a message must fit the 1 KB an Event keeps, fix first.
reasons(field, mode) := concat(", ", {v.reason | some v in mode.violations; v.field == field})

# how_to_fix says what to set and where: the pods come from the runtime, which
# a cluster admin fixes, unless the TrainJob overrides them.
how_to_fix(field, mode) := sprintf(
	"%s; in %s (a cluster admin's fix; curated runtimes meet \"restricted\") or with spec.runtimePatches",
	[concat("; ", fixes(field, mode)), lib.runtime_named],
)

# fixes: what to change, in the order of the checks, each once.
fixes(field, mode) := [f |
	some i, v in mode.violations
	v.field == field
	f := fix(v)
	not fixed_earlier(mode.violations, i, field, f)
]

fixed_earlier(violations, i, field, f) if {
	some j, w in violations
	j < i
	w.field == field
	fix(w) == f
}

fix(v) := v.fix if v.fix != ""

fix(v) := "change the pod template to meet the level (https://kubernetes.io/docs/concepts/security/pod-security-standards/)" if v.fix == ""
