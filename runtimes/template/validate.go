// Package template judges ClusterTrainingRuntimes and TrainingRuntimes written
// by cluster admins: the rules an MPI runtime template must follow for the
// Trainer to run it (ValidateSpec), its constraint annotations
// (runtimes/constraints), its MPI implementation label and whether its pods
// meet Pod Security "restricted" (internal/podsecurity). The runtime
// webhook (webhooks/runtimetemplate) answers with the result at admission;
// audit reports it for runtimes already in the cluster.
package template

import (
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
	"github.com/mpiguard/mpiguard/runtimes/constraints"
)

// Validate judges a runtime: errs make it unusable (the webhook denies it),
// warnings are worth the admin's attention. Runtimes without mlPolicy.mpi are
// judged only on their constraint annotations.
func Validate(meta *metav1.ObjectMeta, spec *trainer.TrainingRuntimeSpec) (errs, warnings field.ErrorList) {
	errs, warnings = ValidateSpec(spec)
	// Malformed constraint annotations would silently lift a limit the admin meant.
	_, constraintErrs := constraints.Parse(meta.Annotations)
	errs = append(errs, constraintErrs...)
	if isMPI(spec) {
		warnings = append(warnings, warnImplementationLabel(meta.Labels)...)
		warnings = append(warnings, warnPodSecurity(spec)...)
	}
	return errs, warnings
}

// Policy is the name the rules of Validate go by wherever their verdicts are
// shown: audit Reports, `mpiguard check`, the webhook's audit annotations and
// its docs link.
const Policy = "runtime-template"

// Refusal is the message a runtime of kind and name is refused with when
// Validate finds errs: the runtime-template webhook's answer and `mpiguard
// check`'s, one wording for both.
func Refusal(kind, name string, errs field.ErrorList) string {
	return fmt.Sprintf("%s %q is not a usable MPI runtime: %s", kind, name, errs.ToAggregate().Error())
}

// WarningLines renders warnings like field errors ("path: message"), the
// form kubectl prints after "Warning:".
func WarningLines(warnings field.ErrorList) []string {
	out := make([]string, 0, len(warnings))
	for _, w := range warnings {
		out = append(out, fmt.Sprintf("%s: %s", w.Field, w.Detail))
	}
	return out
}

// warnImplementationLabel: the label tells the RuntimeTest (and admins) how the
// launcher adapts the OpenMPI hostfile; an unknown value is treated as OpenMPI.
func warnImplementationLabel(labels map[string]string) field.ErrorList {
	v, ok := labels[catalog.LabelMPIImplementation]
	if !ok || v == catalog.ImplementationOpenMPI || v == catalog.ImplementationIntel || v == catalog.ImplementationMPICH {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "labels").Key(catalog.LabelMPIImplementation), v,
		fmt.Sprintf("%q is not a known MPI implementation: RuntimeTests launch mpirun according to this label and treat an unknown value as OpenMPI; use %s, %s or %s",
			v, catalog.ImplementationOpenMPI, catalog.ImplementationIntel, catalog.ImplementationMPICH))}
}

// ConstraintAnnotations are the constraint annotations of meta: an update
// that changes neither them nor the spec changes nothing this package judges.
func ConstraintAnnotations(meta *metav1.ObjectMeta) map[string]string {
	out := map[string]string{}
	for _, k := range constraints.Keys {
		if v, ok := meta.Annotations[k]; ok {
			out[k] = v
		}
	}
	return out
}
