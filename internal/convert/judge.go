package convert

import (
	"bytes"
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/mpiguard/mpiguard/internal/check"
)

// Judge decides the TrainJobs of the converted documents (WriteYAML's) as
// `mpiguard check` does, in cluster (the user's documents; a fresh
// check.NewCluster for none) with the converted documents and the curated
// runtimes added, through ev: the admission pipeline of the webhooks.
func Judge(ctx context.Context, ev *check.Evaluator, cluster *check.Cluster, converted []byte, curated []*trainer.ClusterTrainingRuntime) ([]check.Result, error) {
	if err := cluster.Read("converted", bytes.NewReader(converted)); err != nil {
		return nil, fmt.Errorf("the converted documents: %w", err)
	}
	cluster.Curated = map[string]*trainer.ClusterTrainingRuntime{}
	for _, rt := range curated {
		cluster.Curated[rt.Name] = rt.DeepCopy()
	}
	return ev.Evaluate(ctx, cluster)
}
