package catalog

import (
	"fmt"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
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

// Platform is where the curated runtimes run; it decides who picks the UID
// and fsGroup of their pods.
type Platform string

const (
	// PlatformKubernetes pins UID and fsGroup 1000 (the images' mpiuser), as
	// Pod Security "restricted" needs a non-root UID it can verify.
	PlatformKubernetes Platform = "kubernetes"
	// PlatformOpenShift leaves them out: OpenShift's restricted-v2 SCC refuses
	// a UID outside the project's range and assigns one itself (with GID 0).
	// The images must then work under an arbitrary UID (docs/runtimes.md).
	PlatformOpenShift Platform = "openshift"
)

// Platforms lists the valid values, the default first.
var Platforms = []Platform{PlatformKubernetes, PlatformOpenShift}

// Validate rejects an unknown platform rather than publishing for the wrong one.
func (p Platform) Validate() error {
	if !slices.Contains(Platforms, p) {
		return fmt.Errorf("unknown runtime platform %q: use %s or %s", p, PlatformKubernetes, PlatformOpenShift)
	}
	return nil
}

// platformVariant is the runtime as published on p. For OpenShift it drops
// every fixed runAsUser, runAsGroup and fsGroup and labels the runtime
// LabelPlatform=openshift; everything else, the rest of the securityContext
// included (runAsNonRoot, seccomp, no privilege escalation, dropped
// capabilities), stays: restricted-v2 asks for the same.
func platformVariant(base *trainer.ClusterTrainingRuntime, p Platform) *trainer.ClusterTrainingRuntime {
	rt := base.DeepCopy()
	if p != PlatformOpenShift {
		return rt
	}
	if rt.Labels == nil {
		rt.Labels = map[string]string{}
	}
	rt.Labels[LabelPlatform] = string(p)
	for i := range rt.Spec.Template.Spec.ReplicatedJobs {
		pod := &rt.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec
		if sc := pod.SecurityContext; sc != nil {
			sc.RunAsUser, sc.RunAsGroup, sc.FSGroup = nil, nil, nil
		}
		for _, cs := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
			for j := range cs {
				if sc := cs[j].SecurityContext; sc != nil {
					sc.RunAsUser, sc.RunAsGroup = nil, nil
				}
			}
		}
	}
	return rt
}
