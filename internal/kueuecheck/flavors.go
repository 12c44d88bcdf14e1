package kueuecheck

import (
	"context"
	"fmt"
	"maps"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// KueueManager is the manager of Kueue's runtime patch (Kueue v0.17+: its
// TrainJob webhook adds the entry at create, and its resume fills it with
// the placement of the flavors it assigned).
const KueueManager = "kueue.x-k8s.io/manager"

// podSetPlacement is what Kueue puts on the pods of one pod set when it
// resumes the job: the node labels and tolerations of the flavors it
// assigned.
type podSetPlacement struct {
	name         kueue.PodSetReference
	nodeSelector map[string]string
	tolerations  []corev1.Toleration
}

// placements is, per pod set of adm, what Kueue puts on its pods when it
// resumes the job, as its podset.FromAssignment computes it: every
// distinct flavor's nodeLabels merged into the node selector, its
// tolerations appended (flavors read through c, in name order so the
// result does not depend on map order). A ResourceFlavor adm names that is
// missing is an error: Kueue cannot resume the job either.
//
// Kueue's podset package itself cannot be linked: importing it registers
// Kueue's feature gates in the process-wide gate at init, and its
// "TLSOptions" collides with JobSet's (a panic in any binary with both,
// the test suites'). Topology-aware scheduling's gate is left out.
func placements(ctx context.Context, c client.Client, adm *kueue.Admission) ([]podSetPlacement, error) {
	out := make([]podSetPlacement, 0, len(adm.PodSetAssignments))
	for _, a := range adm.PodSetAssignments {
		p := podSetPlacement{name: a.Name, nodeSelector: map[string]string{}}
		for _, name := range slices.Compact(slices.Sorted(maps.Values(a.Flavors))) {
			f := &kueue.ResourceFlavor{}
			if err := c.Get(ctx, client.ObjectKey{Name: string(name)}, f); err != nil {
				return nil, fmt.Errorf("reading ResourceFlavor %q, which Kueue assigned to pod set %q: %w", name, a.Name, err)
			}
			maps.Copy(p.nodeSelector, f.Spec.NodeLabels)
			p.tolerations = append(p.tolerations, f.Spec.Tolerations...)
		}
		out = append(out, p)
	}
	return out, nil
}

// resumed is job as Kueue's resume will leave it: not suspended, and with
// Kueue's runtime patch carrying, per replicated job, what placed puts on
// its pods, as Kueue v0.17 writes it (TrainJob.RunWithPodSetsInfo: node
// selector and tolerations per pod set, in the entry its webhook added at
// create, keeping the entry's place among the others). A job without Kueue's entry (created while Kueue's webhook was
// not registered, or by a Kueue before v0.17) gets one after every other.
// job is not modified.
//
// Kueue releases up to v0.16 write the placement to
// spec.podTemplateOverrides (Trainer v2.0/v2.1), which Trainer v2.3's CRD
// no longer has and prunes: with them the pods do not get the flavor's
// labels at all (docs/kueue.md). Judging the job with the entry is judging
// what Kueue accounted the job to: a flavor in another residency zone is
// refused either way.
func resumed(job *trainer.TrainJob, placed []podSetPlacement) *trainer.TrainJob {
	out := job.DeepCopy()
	out.Spec.Suspend = ptr.To(false)
	if len(placed) == 0 {
		return out
	}
	rjs := make([]trainer.ReplicatedJobPatch, 0, len(placed))
	for _, p := range placed {
		rjs = append(rjs, trainer.ReplicatedJobPatch{
			Name: string(p.name),
			Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
				Spec: &trainer.PodSpecPatch{NodeSelector: p.nodeSelector, Tolerations: p.tolerations},
			}}},
		})
	}
	i := slices.IndexFunc(out.Spec.RuntimePatches, func(p trainer.RuntimePatch) bool { return p.Manager == KueueManager })
	if i < 0 {
		out.Spec.RuntimePatches = append(out.Spec.RuntimePatches, trainer.RuntimePatch{Manager: KueueManager})
		i = len(out.Spec.RuntimePatches) - 1
	}
	p := &out.Spec.RuntimePatches[i]
	if p.TrainingRuntimeSpec == nil {
		p.TrainingRuntimeSpec = &trainer.TrainingRuntimeSpecPatch{}
	}
	if p.TrainingRuntimeSpec.Template == nil {
		p.TrainingRuntimeSpec.Template = &trainer.JobSetTemplatePatch{}
	}
	if p.TrainingRuntimeSpec.Template.Spec == nil {
		p.TrainingRuntimeSpec.Template.Spec = &trainer.JobSetSpecPatch{}
	}
	p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs = rjs
	return out
}
