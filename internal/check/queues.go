package check

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/mpiguard/mpiguard/internal/gang"
)

// VolcanoQueues are the documents' Volcano Queues, one without a
// status.state read as Open. Documents with none
// describe no queues at all, not a cluster without them: Volcano's
// installation creates its queue "default" (Open, no capability), which is
// then assumed, as curated runtimes are (DefaultQueueAssumed; check says so).
func (r *clusterReader) VolcanoQueues(context.Context) (*gang.Queues, error) {
	if len(r.Queues) == 0 {
		r.DefaultQueueAssumed = true
		return &gang.Queues{Served: true, Items: []volcanov1beta1.Queue{volcanoDefaultQueue()}}, nil
	}
	items := make([]volcanov1beta1.Queue, len(r.Queues))
	for i := range r.Queues {
		items[i] = r.Queues[i]
		if items[i].Status.State == "" {
			// A Queue document written by hand has no status: Volcano's
			// queue controller makes a new queue Open.
			items[i].Status.State = volcanov1beta1.QueueStateOpen
		}
	}
	return &gang.Queues{Served: true, Items: items}, nil
}

// volcanoDefaultQueue is the queue Volcano's installation creates.
func volcanoDefaultQueue() volcanov1beta1.Queue {
	return volcanov1beta1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: volcanov1beta1.DefaultQueue},
		Spec:       volcanov1beta1.QueueSpec{Weight: 1, Capability: corev1.ResourceList{}},
		Status:     volcanov1beta1.QueueStatus{State: volcanov1beta1.QueueStateOpen},
	}
}
