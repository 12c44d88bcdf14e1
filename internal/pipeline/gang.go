package pipeline

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/mpiguard/mpiguard/internal/gang"
	"github.com/mpiguard/mpiguard/internal/render"
)

// volcanoQueues reads the cluster's Volcano queues for a job whose runtime
// gangs with Volcano: nil for any other job, which never reads them (a
// cluster without Volcano judges its jobs as before).
func volcanoQueues(ctx context.Context, c Cluster, view *render.JobView) (*gang.Queues, error) {
	if view == nil || view.Gang == nil || view.Gang.Scheduler != render.GangVolcano {
		return nil, nil
	}
	return c.VolcanoQueues(ctx)
}

// The webhooks and audit read Volcano queues (cluster-scoped) for jobs that
// gang with Volcano; read only.
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=queues,verbs=get;list;watch

// VolcanoQueues lists the cluster's Volcano Queues (cluster-scoped; RBAC get,
// list, watch). An apiserver that does not serve the kind has no Volcano:
// Queues.Served is false, which the gang-scheduling policy denies.
func (c ClientCluster) VolcanoQueues(ctx context.Context) (*gang.Queues, error) {
	var list volcanov1beta1.QueueList
	err := c.Reader.List(ctx, &list)
	switch {
	case meta.IsNoMatchError(err):
		return &gang.Queues{}, nil
	case err != nil:
		return nil, fmt.Errorf("listing Volcano Queues: %w", err)
	}
	return &gang.Queues{Served: true, Items: list.Items}, nil
}
