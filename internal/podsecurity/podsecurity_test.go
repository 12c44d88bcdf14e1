package podsecurity

import (
	"k8s.io/pod-security-admission/api"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

const workerField = "spec.replicatedJobs[node].template.spec.template.spec"

// hardened is a pod template that meets "restricted": what every curated
// runtime sets.
func hardened() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](1000),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name: "node", Image: "mpioperator/openmpi",
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}},
			},
		}},
		Volumes: []corev1.Volume{{Name: "mpi-ssh-auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}}},
	}}
}

// plain is the pre-hardening curated layout: runAsUser 1000 and fsGroup, nothing else.
func plain() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000)},
		Containers: []corev1.Container{{
			Name: "node", Image: "mpioperator/openmpi",
			SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)},
		}},
	}}
}

func workers(tpl *corev1.PodTemplateSpec) []Pod {
	return []Pod{{ReplicatedJob: "node", Role: "worker", Field: workerField, Template: tpl}}
}

// What the apiserver (v1.36) says about plain() under restricted, check by check.
var plainRestricted = []Violation{
	{ReplicatedJob: "node", Role: "worker", Field: workerField, Reason: "allowPrivilegeEscalation != false",
		Detail: `container "node" must set securityContext.allowPrivilegeEscalation=false`, Fix: fixes["allowPrivilegeEscalation != false"]},
	{ReplicatedJob: "node", Role: "worker", Field: workerField, Reason: "unrestricted capabilities",
		Detail: `container "node" must set securityContext.capabilities.drop=["ALL"]`, Fix: fixes["unrestricted capabilities"]},
	{ReplicatedJob: "node", Role: "worker", Field: workerField, Reason: "runAsNonRoot != true",
		Detail: `pod or container "node" must set securityContext.runAsNonRoot=true`, Fix: fixes["runAsNonRoot != true"]},
	{ReplicatedJob: "node", Role: "worker", Field: workerField, Reason: "seccompProfile",
		Detail: `pod or container "node" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`, Fix: fixes["seccompProfile"]},
}

func TestEvaluate(t *testing.T) {
	none := []Violation{}
	privileged := Mode{Level: "privileged", Version: "latest", Policy: "privileged:latest", Violations: none}
	cases := map[string]struct {
		labels map[string]string
		pods   []Pod
		want   Result
	}{
		"no labels: privileged, as the upstream default": {
			pods: workers(plain()),
			want: Result{Enforce: privileged, Warn: privileged, Audit: privileged, Errors: []string{}},
		},
		"enforce restricted: every check the pod fails, warn defaults to the enforced level": {
			labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
			pods:   workers(plain()),
			want: Result{
				Enforce: Mode{Level: "restricted", Version: "latest", Policy: "restricted:latest", Violations: plainRestricted},
				Warn:    Mode{Level: "restricted", Version: "latest", Policy: "restricted:latest", Violations: plainRestricted},
				Audit:   privileged,
				Errors:  []string{},
			},
		},
		"enforce restricted: a hardened pod passes": {
			labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
			pods:   workers(hardened()),
			want: Result{
				Enforce: Mode{Level: "restricted", Version: "latest", Policy: "restricted:latest", Violations: none},
				Warn:    Mode{Level: "restricted", Version: "latest", Policy: "restricted:latest", Violations: none},
				Audit:   privileged,
				Errors:  []string{},
			},
		},
		"enforce baseline, warn and audit restricted at a pinned version": {
			labels: map[string]string{
				"pod-security.kubernetes.io/enforce":       "baseline",
				"pod-security.kubernetes.io/warn":          "restricted",
				"pod-security.kubernetes.io/warn-version":  "v1.30",
				"pod-security.kubernetes.io/audit":         "restricted",
				"pod-security.kubernetes.io/audit-version": "v1.30",
			},
			pods: workers(plain()),
			want: Result{
				Enforce: Mode{Level: "baseline", Version: "latest", Policy: "baseline:latest", Violations: none},
				Warn:    Mode{Level: "restricted", Version: "v1.30", Policy: "restricted:v1.30", Violations: plainRestricted},
				Audit:   Mode{Level: "restricted", Version: "v1.30", Policy: "restricted:v1.30", Violations: plainRestricted},
				Errors:  []string{},
			},
		},
		"a malformed enforce level is enforced as restricted:latest, as the apiserver does": {
			labels: map[string]string{"pod-security.kubernetes.io/enforce": "strict"},
			pods:   workers(hardened()),
			want: Result{
				Enforce: Mode{Level: "restricted", Version: "latest", Policy: "restricted:latest", Violations: none},
				Warn:    privileged,
				Audit:   privileged,
				Errors:  []string{`metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Evaluate(tc.labels, tc.pods)); diff != "" {
				t.Errorf("Evaluate (-want +got):\n%s", diff)
			}
		})
	}
}

// Baseline does not ask for what restricted adds; a privileged container
// breaks both.
func TestCheckLevels(t *testing.T) {
	tpl := plain()
	tpl.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
	got := Describe(Check(Restricted, &tpl.ObjectMeta, &tpl.Spec))
	want := `privileged (container "node" must not set securityContext.privileged=true), ` +
		`allowPrivilegeEscalation != false (container "node" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (container "node" must set securityContext.capabilities.drop=["ALL"]), ` +
		`runAsNonRoot != true (pod or container "node" must set securityContext.runAsNonRoot=true), ` +
		`seccompProfile (pod or container "node" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restricted (-want +got):\n%s", diff)
	}
	baseline := api.LevelVersion{Level: api.LevelBaseline, Version: api.LatestVersion()}
	if diff := cmp.Diff(`privileged (container "node" must not set securityContext.privileged=true)`,
		Describe(Check(baseline, &tpl.ObjectMeta, &tpl.Spec))); diff != "" {
		t.Errorf("baseline (-want +got):\n%s", diff)
	}
	if got := Check(Restricted, &hardened().ObjectMeta, &hardened().Spec); len(got) != 0 {
		t.Errorf("hardened pod fails restricted: %s", Describe(got))
	}
	if diff := cmp.Diff([]string{
		fixes["privileged"], fixes["allowPrivilegeEscalation != false"], fixes["unrestricted capabilities"],
		fixes["runAsNonRoot != true"], fixes["seccompProfile"],
	}, Fixes(Check(Restricted, &tpl.ObjectMeta, &tpl.Spec))); diff != "" {
		t.Errorf("Fixes (-want +got):\n%s", diff)
	}
}
