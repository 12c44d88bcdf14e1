package catalog

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/utils/ptr"
)

// withGangVariants returns the runtime itself (default scheduler, no PodGroup)
// followed by its Volcano and coscheduling variants. The variants are derived in
// code rather than copied into more YAML so that the three can never drift apart.
func withGangVariants(base *trainer.ClusterTrainingRuntime) []*trainer.ClusterTrainingRuntime {
	return []*trainer.ClusterTrainingRuntime{
		base.DeepCopy(),
		volcanoVariant(base),
		coschedulingVariant(base),
	}
}

func volcanoVariant(base *trainer.ClusterTrainingRuntime) *trainer.ClusterTrainingRuntime {
	rt := gangVariant(base, GangVolcano, VolcanoSchedulerName)
	rt.Spec.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{
		Volcano: &trainer.VolcanoPodGroupPolicySource{},
	}}
	if rt.Spec.Template.Annotations == nil {
		rt.Spec.Template.Annotations = map[string]string{}
	}
	rt.Spec.Template.Annotations[VolcanoQueueAnnotation] = VolcanoDefaultQueue
	return rt
}

func coschedulingVariant(base *trainer.ClusterTrainingRuntime) *trainer.ClusterTrainingRuntime {
	rt := gangVariant(base, GangCoscheduling, CoschedulingSchedulerName)
	rt.Spec.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{
		Coscheduling: &trainer.CoschedulingPodGroupPolicySource{
			ScheduleTimeoutSeconds: ptr.To[int32](CoschedulingTimeoutSeconds),
		},
	}}
	return rt
}

// gangVariant names the copy <name>-<gang>, labels it and points every pod
// template at the gang scheduler: a PodGroup that the default scheduler never
// reads gangs nothing.
func gangVariant(base *trainer.ClusterTrainingRuntime, gang, schedulerName string) *trainer.ClusterTrainingRuntime {
	rt := base.DeepCopy()
	rt.Name = base.Name + "-" + gang
	if rt.Labels == nil {
		rt.Labels = map[string]string{}
	}
	rt.Labels[LabelGangScheduler] = gang
	for i := range rt.Spec.Template.Spec.ReplicatedJobs {
		rt.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.SchedulerName = schedulerName
	}
	return rt
}
