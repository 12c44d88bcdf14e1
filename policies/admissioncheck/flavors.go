package admissioncheck

import (
	"fmt"
	"maps"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// KueueManager is the manager of the runtime patch that stands, in the job
// mpiguard judges, for what Kueue writes on the resume: its manager name in
// managedBy and field ownership.
const KueueManager = "kueue.x-k8s.io/manager"

// podSetPlacement is what Kueue puts on the pods of one pod set when it
// resumes the job: the node labels and tolerations of the flavors it assigned.
type podSetPlacement struct {
	nodeSelector map[string]string
	tolerations  []corev1.Toleration
}

// placements is, per pod set (a replicated job of the TrainJob's JobSet),
// what the flavors of adm put on its pods, as Kueue computes it
// (podset.FromAssignment: every distinct flavor's nodeLabels merged into
// the node selector, its tolerations appended). flavors are the
// ResourceFlavors by name; one adm names that is missing is an error (Kueue
// cannot resume the job either).
func placements(adm *kueue.Admission, flavors map[kueue.ResourceFlavorReference]*kueue.ResourceFlavor) (map[string]podSetPlacement, error) {
	out := map[string]podSetPlacement{}
	for _, a := range adm.PodSetAssignments {
		p := podSetPlacement{nodeSelector: map[string]string{}}
		// Sorted: the order of tolerations must not depend on map order.
		names := slices.Sorted(maps.Values(a.Flavors))
		for _, name := range slices.Compact(names) {
			f := flavors[name]
			if f == nil {
				return nil, fmt.Errorf("ResourceFlavor %q, which Kueue assigned to pod set %q, not found", name, a.Name)
			}
			maps.Copy(p.nodeSelector, f.Spec.NodeLabels)
			p.tolerations = append(p.tolerations, f.Spec.Tolerations...)
		}
		if len(p.nodeSelector) > 0 || len(p.tolerations) > 0 {
			out[string(a.Name)] = p
		}
	}
	return out, nil
}

// flavorNames lists the ResourceFlavors adm assigns.
func flavorNames(adm *kueue.Admission) []kueue.ResourceFlavorReference {
	var out []kueue.ResourceFlavorReference
	for _, a := range adm.PodSetAssignments {
		out = append(out, slices.Collect(maps.Values(a.Flavors))...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// resumed is job as Kueue's resume will leave it: not suspended, and with
// the placements of its flavors on the pods of each replicated job, as a
// runtime patch after every other (the Trainer applies patches in order, so
// a flavor's node label wins over an earlier selector of the same key, as
// Kueue's override would). job is not modified.
//
// Kueue releases up to v0.16 write the placements to
// spec.podTemplateOverrides (Trainer v2.0/v2.1), which Trainer v2.3's CRD
// no longer has and prunes: with them the pods do not get the flavor's
// labels at all (docs/kueue.md). Judging the job with them is judging what
// Kueue accounted the job to — a flavor in another residency zone is
// refused either way.
func resumed(job *trainer.TrainJob, placed map[string]podSetPlacement) *trainer.TrainJob {
	out := job.DeepCopy()
	out.Spec.Suspend = ptr.To(false)
	if len(placed) == 0 {
		return out
	}
	var rjs []trainer.ReplicatedJobPatch
	for _, name := range slices.Sorted(maps.Keys(placed)) {
		p := placed[name]
		spec := &trainer.PodSpecPatch{Tolerations: p.tolerations}
		if len(p.nodeSelector) > 0 {
			spec.NodeSelector = p.nodeSelector
		}
		rjs = append(rjs, trainer.ReplicatedJobPatch{
			Name:     name,
			Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{Spec: spec}}},
		})
	}
	out.Spec.RuntimePatches = append(out.Spec.RuntimePatches, trainer.RuntimePatch{
		Manager: KueueManager,
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{
			Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: rjs}},
		},
	})
	return out
}
