package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	schedulerpluginsv1alpha1ac "sigs.k8s.io/scheduler-plugins/pkg/generated/applyconfiguration/scheduling/v1alpha1"
	volcanov1beta1ac "volcano.sh/apis/pkg/client/applyconfiguration/scheduling/v1beta1"
)

// Gang schedulers a runtime's podGroupPolicy picks.
const (
	GangVolcano      = "volcano"
	GangCoscheduling = "coscheduling"
)

// Gang is the PodGroup the Trainer builds for a job whose runtime has a
// podGroupPolicy: read from the object its Volcano or coscheduling plugin
// builds during the render, so it is the Trainer's own computation (the
// whole gang: minMember is every pod, minResources every pod's requests as
// the pod template states them, before LimitRange or apiserver defaults).
type Gang struct {
	// Scheduler is GangVolcano or GangCoscheduling.
	Scheduler string
	// MinMember and MinResources are the PodGroup's spec.
	MinMember    int32
	MinResources corev1.ResourceList
	// Queue (Volcano) is the PodGroup's spec.queue: the
	// scheduling.volcano.sh/queue-name annotation of the runtime's template
	// metadata, which a runtime patch's template metadata overrides; "" when
	// neither sets it (Volcano then puts the PodGroup in its queue "default").
	Queue string
	// ScheduleTimeoutSeconds (coscheduling) is the PodGroup's; nil when unset.
	ScheduleTimeoutSeconds *int32
}

// gangOf finds the PodGroup among the objects the Trainer's component
// builders made; nil when there is none (no podGroupPolicy).
func gangOf(objects []runtime.ApplyConfiguration) *Gang {
	for _, obj := range objects {
		switch pg := obj.(type) {
		case *volcanov1beta1ac.PodGroupApplyConfiguration:
			g := &Gang{Scheduler: GangVolcano}
			if s := pg.Spec; s != nil {
				g.MinMember, g.Queue = ptr.Deref(s.MinMember, 0), ptr.Deref(s.Queue, "")
				g.MinResources = ptr.Deref(s.MinResources, nil)
			}
			return g
		case *schedulerpluginsv1alpha1ac.PodGroupApplyConfiguration:
			g := &Gang{Scheduler: GangCoscheduling}
			if s := pg.Spec; s != nil {
				g.MinMember, g.ScheduleTimeoutSeconds = ptr.Deref(s.MinMember, 0), s.ScheduleTimeoutSeconds
				g.MinResources = ptr.Deref(s.MinResources, nil)
			}
			return g
		}
	}
	return nil
}
