package template

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// Every curated runtime, in both flavours, meets Pod Security "restricted":
// Validate, which the runtime webhook and audit call, warns about none.
func TestCuratedRuntimesMeetRestricted(t *testing.T) {
	for _, p := range catalog.Platforms {
		all, err := catalog.LoadFor(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range all {
			errs, warnings := Validate(&rt.ObjectMeta, &rt.Spec)
			if len(errs)+len(warnings) > 0 {
				t.Errorf("%s/%s: errors %v, warnings %v", p, rt.Name, errs, warnings)
			}
		}
	}
}

// A template whose pods Pod Security "restricted" refuses gets one warning
// per pod template: the apiserver's reasons, where, and what to set.
func TestWarnsWhenPodsFailRestricted(t *testing.T) {
	spec := curated(t, "mpiguard-openmpi-v2")
	// The curated layout before it was made restricted-safe: UID 1000, nothing else.
	pod := &spec.Template.Spec.ReplicatedJobs[worker].Template.Spec.Template.Spec
	pod.SecurityContext.RunAsNonRoot, pod.SecurityContext.SeccompProfile = nil, nil
	pod.Containers[0].SecurityContext = nil
	_, got := Validate(&metav1.ObjectMeta{}, spec)
	want := field.ErrorList{field.Forbidden(rj(worker).Child("template", "spec", "template", "spec"),
		`would violate PodSecurity "restricted:latest": `+
			`allowPrivilegeEscalation != false (container "node" must set securityContext.allowPrivilegeEscalation=false), `+
			`unrestricted capabilities (container "node" must set securityContext.capabilities.drop=["ALL"]), `+
			`runAsNonRoot != true (pod or container "node" must set securityContext.runAsNonRoot=true), `+
			`seccompProfile (pod or container "node" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"); `+
			`a namespace labelled pod-security.kubernetes.io/enforce: restricted refuses these pods, and mpiguard denies TrainJobs on this runtime there; `+
			`set securityContext.allowPrivilegeEscalation: false on every container; `+
			`set securityContext.capabilities.drop: [ALL] on every container (add: at most NET_BIND_SERVICE); `+
			`set securityContext.runAsNonRoot: true on the pod, with a non-zero runAsUser or an image whose USER is a non-zero UID; `+
			`set securityContext.seccompProfile.type: RuntimeDefault on the pod `+
			`(the curated mpiguard runtimes show a restricted-safe MPI layout)`)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
