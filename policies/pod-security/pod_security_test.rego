package mpiguard.policies.pod_security_test

import data.mpiguard.policies.pod_security

worker_field := "spec.replicatedJobs[node].template.spec.template.spec"

launcher_field := "spec.replicatedJobs[launcher].template.spec.template.spec"

no_escalation := {
	"replicatedJob": "node", "role": "worker", "field": worker_field,
	"reason": "allowPrivilegeEscalation != false",
	"detail": `container "node" must set securityContext.allowPrivilegeEscalation=false`,
	"fix": "set securityContext.allowPrivilegeEscalation: false on every container",
}

seccomp := {
	"replicatedJob": "node", "role": "worker", "field": worker_field,
	"reason": "seccompProfile",
	"detail": `pod or container "node" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`,
	"fix": "set securityContext.seccompProfile.type: RuntimeDefault on the pod",
}

launcher_escalation := object.union(no_escalation, {"replicatedJob": "launcher", "role": "launcher", "field": launcher_field})

mode(policy, violations) := {"policy": policy, "violations": violations}

privileged := mode("privileged:latest", [])

job_input(enforce, warn_mode, audit, errors) := {
	"request": {"operation": "CREATE"},
	"trainJob": {"name": "train", "namespace": "team-a"},
	"namespace": {"name": "team-a"},
	"runtime": {"kind": "ClusterTrainingRuntime", "name": "openmpi-plain"},
	"job": {"mpi": true, "podSecurity": {"enforce": enforce, "warn": warn_mode, "audit": audit, "errors": errors}},
}

test_no_violations_allowed if {
	doc := job_input(mode("restricted:latest", []), mode("restricted:latest", []), privileged, [])
	count(pod_security.deny) == 0 with input as doc
	count(pod_security.warn) == 0 with input as doc
}

test_enforced_violations_denied_one_line_per_pod if {
	doc := job_input(mode("restricted:latest", [no_escalation, seccomp, launcher_escalation]), mode("restricted:latest", [no_escalation]), privileged, [])
	got := pod_security.deny with input as doc
	got == {
		{
			"field": worker_field,
			"msg": `pods of the Workers (replicated job "node") would violate PodSecurity "restricted:latest", which namespace team-a enforces (label pod-security.kubernetes.io/enforce): the apiserver would refuse them, and the TrainJob would never start; set securityContext.allowPrivilegeEscalation: false on every container; set securityContext.seccompProfile.type: RuntimeDefault on the pod; in ClusterTrainingRuntime "openmpi-plain" (a cluster admin's fix; curated runtimes meet "restricted") or with spec.runtimePatches; failed checks: allowPrivilegeEscalation != false, seccompProfile`,
		},
		{
			"field": launcher_field,
			"msg": `pods of the Launcher (replicated job "launcher") would violate PodSecurity "restricted:latest", which namespace team-a enforces (label pod-security.kubernetes.io/enforce): the apiserver would refuse them, and the TrainJob would never start; set securityContext.allowPrivilegeEscalation: false on every container; in ClusterTrainingRuntime "openmpi-plain" (a cluster admin's fix; curated runtimes meet "restricted") or with spec.runtimePatches; failed checks: allowPrivilegeEscalation != false`,
		},
	}

	# A refused job gets no warnings, as from the apiserver.
	count(pod_security.warn) == 0 with input as doc
}

test_warn_level_warns if {
	doc := job_input(mode("baseline:latest", []), mode("restricted:v1.30", [seccomp]), privileged, [])
	count(pod_security.deny) == 0 with input as doc
	got := pod_security.warn with input as doc
	got == {{
		"field": worker_field,
		"msg": `pods of the Workers (replicated job "node") would violate PodSecurity "restricted:v1.30", which namespace team-a warns about (label pod-security.kubernetes.io/warn): created here, refused where the level is enforced; set securityContext.seccompProfile.type: RuntimeDefault on the pod; in ClusterTrainingRuntime "openmpi-plain" (a cluster admin's fix; curated runtimes meet "restricted") or with spec.runtimePatches; failed checks: seccompProfile`,
	}}
}

test_audit_level_warns_once if {
	# audit at another level than warn: its own warning.
	doc := job_input(privileged, privileged, mode("restricted:latest", [seccomp]), [])
	got := pod_security.warn with input as doc
	count(got) == 1
	some w in got
	contains(w.msg, "which namespace team-a audits (label pod-security.kubernetes.io/audit)")
	contains(w.msg, "recorded in the apiserver's audit log")

	# audit at the warn level: one warning, not two.
	same := job_input(privileged, mode("restricted:latest", [seccomp]), mode("restricted:latest", [seccomp]), [])
	count(pod_security.warn) == 1 with input as same
}

test_unknown_reason_points_to_the_standards if {
	odd := object.union(seccomp, {"reason": "something new", "detail": "", "fix": ""})
	doc := job_input(mode("restricted:latest", [odd]), privileged, privileged, [])
	some d in pod_security.deny with input as doc
	contains(d.msg, `namespace team-a enforces (label pod-security.kubernetes.io/enforce): the apiserver`)
	endswith(d.msg, "failed checks: something new")
	contains(d.msg, "change the pod template to meet the level (https://kubernetes.io/docs/concepts/security/pod-security-standards/)")
}

test_other_replicated_job_named if {
	init := object.union(seccomp, {"replicatedJob": "dataset-initializer", "role": "other", "field": "spec.replicatedJobs[dataset-initializer].template.spec.template.spec"})
	doc := job_input(mode("restricted:latest", [init]), privileged, privileged, [])
	some d in pod_security.deny with input as doc
	startswith(d.msg, `pods of replicated job "dataset-initializer" would violate`)
}

test_malformed_label_warns if {
	err := `metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`
	doc := job_input(mode("restricted:latest", []), privileged, privileged, [err])
	got := pod_security.warn with input as doc
	got == {{
		"field": "metadata.namespace",
		"msg": sprintf(`namespace team-a has a malformed Pod Security label (%s): the apiserver then enforces "restricted" for a malformed enforce level, ignores a malformed warn or audit level and reads a malformed version as "latest", and mpiguard predicts the same; ask a cluster admin to fix the label`, [err]),
	}}
}
