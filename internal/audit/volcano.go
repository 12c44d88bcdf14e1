package audit

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// watchVolcanoQueues re-audits the namespaces with TrainJobs when a Volcano
// Queue's spec (capability, parent) or state changes: a stored gang its queue
// can no longer hold is reported then, not at the next interval. A cluster
// that does not serve Queues (no Volcano) has nothing to watch: a Volcano
// installed later is seen by the interval audits.
func watchVolcanoQueues(mgr ctrl.Manager, b *builder.Builder, c *Controller) *builder.Builder {
	gk := schema.GroupKind{Group: volcanov1beta1.SchemeGroupVersion.Group, Kind: "Queue"}
	if _, err := mgr.GetRESTMapper().RESTMapping(gk, volcanov1beta1.SchemeGroupVersion.Version); err != nil {
		return b
	}
	return b.Watches(&volcanov1beta1.Queue{}, c.debounced(c.namespacesWithJobs), builder.WithPredicates(queueChanged()))
}

// queueChanged passes creations, deletions, spec changes and state changes:
// not status.allocated, which moves with every pod Volcano places.
func queueChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, ok1 := e.ObjectOld.(*volcanov1beta1.Queue)
			cur, ok2 := e.ObjectNew.(*volcanov1beta1.Queue)
			if !ok1 || !ok2 {
				return true
			}
			return old.Generation != cur.Generation || old.Status.State != cur.Status.State
		},
	}
}
