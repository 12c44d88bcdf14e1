package render

import (
	"maps"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// addRequested fills each replicated job's Requested: its pod template's
// labels and annotations as the runtime's template and the runtime patches of
// every manager but own make them. The caller's own entry is applied last and
// overrides them, so without this a policy would only see the override: a
// pod template the user opted into the Istio sidecar, relabelled out of it by
// mpiguard, would look opted out. The template cache holds the merge (the
// mutating pass rendered the same patches without mpiguard's entry), so this
// costs a lookup.
func (r *Renderer) addRequested(view *JobView, runtimeObj client.Object, trainJob *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec, own string) error {
	isOwn := func(p trainer.RuntimePatch) bool { return p.Manager == own }
	// Most renders (every job without the entry yet) stop here, allocating nothing.
	if own == "" || !slices.ContainsFunc(trainJob.Spec.RuntimePatches, isOwn) {
		return nil
	}
	others := slices.DeleteFunc(slices.Clone(trainJob.Spec.RuntimePatches), isOwn)
	without := *trainJob
	without.Spec.RuntimePatches = others
	merged, err := r.templates.get(runtimeCacheKey(runtimeObj.GetObjectKind().GroupVersionKind().Kind, runtimeObj), &without, spec.Template.Spec)
	if err != nil {
		return err
	}
	for i := range view.ReplicatedJobs {
		rv := &view.ReplicatedJobs[i]
		// A replicated job only the own entry adds was asked for by nobody else.
		rv.Requested = &PodMetadata{}
		for j := range merged.typed.ReplicatedJobs {
			if rj := &merged.typed.ReplicatedJobs[j]; rj.Name == rv.Name {
				// The cached template is shared: the view gets copies.
				rv.Requested.Labels = maps.Clone(rj.Template.Spec.Template.Labels)
				rv.Requested.Annotations = maps.Clone(rj.Template.Spec.Template.Annotations)
				break
			}
		}
	}
	return nil
}
