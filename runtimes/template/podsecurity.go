package template

import (
	"fmt"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mpiguard/mpiguard/internal/podsecurity"
)

// warnPodSecurity warns about pod templates that Pod Security "restricted"
// refuses, with the apiserver's own checks. A warning, not a denial: a
// cluster without such namespaces runs them fine. But where a namespace
// enforces it, the TrainJob webhook denies every TrainJob on the runtime
// (policies/pod-security) and, without mpiguard, the pods are never
// created. TrainJobs can change the pods with runtime patches; this judges
// the template as written.
func warnPodSecurity(spec *trainer.TrainingRuntimeSpec) field.ErrorList {
	var warnings field.ErrorList
	for i := range spec.Template.Spec.ReplicatedJobs {
		pod := &spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template
		reasons := podsecurity.Check(podsecurity.Restricted, &pod.ObjectMeta, &pod.Spec)
		if len(reasons) == 0 {
			continue
		}
		fix := "change the pod template to meet the level (https://kubernetes.io/docs/concepts/security/pod-security-standards/)"
		if fixes := podsecurity.Fixes(reasons); len(fixes) > 0 {
			fix = strings.Join(fixes, "; ")
		}
		warnings = append(warnings, field.Forbidden(rjPath.Index(i).Child("template", "spec", "template", "spec"), fmt.Sprintf(
			"would violate PodSecurity %q: %s; a namespace labelled pod-security.kubernetes.io/enforce: restricted refuses these pods, and mpiguard denies TrainJobs on this runtime there; %s (the curated mpiguard runtimes show a restricted-safe MPI layout)",
			podsecurity.Restricted.String(), podsecurity.Describe(reasons), fix)))
	}
	return warnings
}
