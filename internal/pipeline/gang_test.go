package pipeline

import (
	"context"

	"github.com/mpiguard/mpiguard/internal/gang"
)

func (m memCluster) VolcanoQueues(context.Context) (*gang.Queues, error) {
	return m.queues, nil
}
