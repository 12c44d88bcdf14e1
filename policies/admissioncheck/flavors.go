package admissioncheck

import (
	"context"
	"fmt"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/podset"
)

// KueueManager is the manager of Kueue's runtime patch (Kueue v0.17+: its
// TrainJob webhook adds the entry at create, and its resume fills it with
// the placement of the flavors it assigned).
const KueueManager = "kueue.x-k8s.io/manager"

// podSetInfos is, per pod set of adm, what Kueue puts on its pods when it
// resumes the job: Kueue's own podset.FromAssignment (the node labels and
// tolerations of every distinct flavor assigned, read through c; under
// topology-aware scheduling, its scheduling gate). A ResourceFlavor adm
// names that is missing is an error: Kueue cannot resume the job either.
func podSetInfos(ctx context.Context, c client.Client, wl *kueue.Workload, adm *kueue.Admission) ([]podset.PodSetInfo, error) {
	out := make([]podset.PodSetInfo, 0, len(adm.PodSetAssignments))
	for i := range adm.PodSetAssignments {
		a := &adm.PodSetAssignments[i]
		ps := &kueue.PodSet{Name: a.Name}
		if j := slices.IndexFunc(wl.Spec.PodSets, func(p kueue.PodSet) bool { return p.Name == a.Name }); j >= 0 {
			ps = &wl.Spec.PodSets[j]
		}
		info, err := podset.FromAssignment(ctx, c, a, ps)
		if err != nil {
			return nil, fmt.Errorf("reading the ResourceFlavors Kueue assigned to pod set %q: %w", a.Name, err)
		}
		out = append(out, info)
	}
	return out, nil
}

// resumed is job as Kueue's resume will leave it: not suspended, and with
// Kueue's runtime patch carrying, per replicated job, what infos put on its
// pods, exactly as Kueue v0.17 writes it (TrainJob.RunWithPodSetsInfo:
// labels, annotations, node selector, tolerations, scheduling gates, in the
// entry its webhook added at create, keeping the entry's place among the
// others). A job without Kueue's entry (created while Kueue's webhook was
// not registered, or by a Kueue before v0.17) gets one after every other.
// job is not modified.
//
// Kueue releases up to v0.16 write the placement to
// spec.podTemplateOverrides (Trainer v2.0/v2.1), which Trainer v2.3's CRD
// no longer has and prunes: with them the pods do not get the flavor's
// labels at all (docs/kueue.md). Judging the job with the entry is judging
// what Kueue accounted the job to: a flavor in another residency zone is
// refused either way.
func resumed(job *trainer.TrainJob, infos []podset.PodSetInfo) *trainer.TrainJob {
	out := job.DeepCopy()
	out.Spec.Suspend = ptr.To(false)
	if len(infos) == 0 {
		return out
	}
	rjs := make([]trainer.ReplicatedJobPatch, 0, len(infos))
	for _, info := range infos {
		rjs = append(rjs, trainer.ReplicatedJobPatch{
			Name: string(info.Name),
			Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
				Metadata: &metav1.ObjectMeta{Annotations: info.Annotations, Labels: info.Labels},
				Spec: &trainer.PodSpecPatch{
					NodeSelector:    info.NodeSelector,
					Tolerations:     info.Tolerations,
					SchedulingGates: info.SchedulingGates,
				},
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
