package render

import (
	"fmt"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// More of the apiserver's pod validation (k8s.io/kubernetes pkg/apis/core/
// validation) that a TrainJob can break without the TrainJob itself being
// invalid: the TrainJob CRD does not check env names, images or node
// selectors, so the apiserver stores the TrainJob and then rejects every Job
// the JobSet controller creates from it. Found by the hostile-input table
// (test/fixtures/hostile.go).

// podSpecProblems checks container images and env names and the node selector.
func podSpecProblems(spec *corev1.PodSpec, podPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, group := range []struct {
		name string
		cs   []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i := range group.cs {
			c := &group.cs[i]
			cPath := podPath.Child(group.name).Key(c.Name)
			errs = append(errs, imageProblems(c.Image, cPath.Child("image"))...)
			for _, e := range c.Env {
				errs = append(errs, envNameProblems(e.Name, cPath.Child("env").Key(e.Name).Child("name"))...)
			}
		}
	}
	for _, e := range metav1validation.ValidateLabels(spec.NodeSelector, podPath.Child("nodeSelector")) {
		e.Detail += "; " + hangHint + "; node selectors are label keys and values: fix the runtime patch's nodeSelector"
		errs = append(errs, e)
	}
	return errs
}

// imageProblems mirrors validateContainers' image rules: required (for
// containers; init containers too), no leading or trailing whitespace.
func imageProblems(image string, path *field.Path) field.ErrorList {
	switch {
	case image == "":
		return field.ErrorList{field.Required(path, hangHint+"; set spec.trainer.image or leave it out to keep the runtime's image")}
	case strings.TrimSpace(image) != image:
		return field.ErrorList{field.Invalid(path, image, "must not have leading or trailing whitespace; "+hangHint)}
	}
	return nil
}

// envNameProblems is validateEnvVarName with the relaxed rule the apiserver
// applies since Kubernetes 1.32 (RelaxedEnvironmentVariableValidation):
// printable ASCII except '='. Older apiservers are stricter.
func envNameProblems(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, hangHint)}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsRelaxedEnvVarName(name) {
		errs = append(errs, field.Invalid(path, name, msg+"; "+hangHint+"; rename the variable"))
	}
	return errs
}

// patchTargetsError refuses a runtime patch of a replicated job the runtime
// does not have. The Trainer ignores such a patch when it builds the JobSet,
// but its webhook refuses the TrainJob ("must not have replicated job that
// doesn't exist in the runtime job template"); without that webhook (or
// offline) the patch would be dropped without a word.
func patchTargetsError(trainJob *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec, kind, runtime string) error {
	var have []string
	for _, rj := range spec.Template.Spec.ReplicatedJobs {
		have = append(have, rj.Name)
	}
	for i, p := range trainJob.Spec.RuntimePatches {
		if p.TrainingRuntimeSpec == nil || p.TrainingRuntimeSpec.Template == nil || p.TrainingRuntimeSpec.Template.Spec == nil {
			continue
		}
		for j, rj := range p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs {
			if !slices.Contains(have, rj.Name) {
				return fmt.Errorf("spec.runtimePatches[%d].trainingRuntimeSpec.template.spec.replicatedJobs[%d].name: Invalid value: %q: "+
					"%s %q has no replicated job %q (it has %s), so the patch of manager %s would be dropped and the Trainer refuses the TrainJob; patch one of those",
					i, j, rj.Name, kind, runtime, rj.Name, strings.Join(have, ", "), p.Manager)
			}
		}
	}
	return nil
}
