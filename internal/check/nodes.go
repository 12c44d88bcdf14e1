package check

import (
	"context"

	"github.com/mpiguard/mpiguard/internal/capacity"
)

// Nodes are the Node documents by shape. Documents with none describe no
// nodes at all, not a cluster without them: the node-capacity check is
// skipped (NodesSkipped; check says so).
func (r *clusterReader) Nodes(context.Context) (*capacity.Summary, error) {
	if len(r.Cluster.Nodes) == 0 {
		r.NodesSkipped = true
		return nil, nil
	}
	if r.nodes == nil {
		r.nodes = capacity.Summarize(r.Cluster.Nodes)
	}
	return r.nodes, nil
}
