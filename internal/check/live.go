package check

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/render"
)

// ClusterFor returns the live cluster a new TrainJob of namespace ns is
// read from (runtimes, the namespace, LimitRanges and RuntimeClasses) and
// the quota state it is judged against: its quotas with their usage and the
// reservations on them, read as the quota transaction reads them
// (audit.Auditor.QuotaState).
type ClusterFor func(ctx context.Context, ns string) (pipeline.Cluster, *input.QuotaState, error)

// EvaluateLive decides each TrainJob as a CREATE (a suspended one, as a
// stored Kueue job is, as its resume: Request) in the live cluster
// clusterFor reads, through the admission pipeline (stage Admit), as the
// apiserver would run the two webhooks if it were submitted now. Each job is
// judged on its own: unlike Evaluate, jobs earlier in the input do not count
// against quotas (they are not in the cluster). A job of the same name that
// is stored already is left out of what its namespace holds, as a job being
// decided is left out of its own decision.
func (ev *Evaluator) EvaluateLive(ctx context.Context, jobs []SourcedTrainJob, clusterFor ClusterFor) ([]Result, error) {
	objs := make([]client.Object, 0, len(jobs))
	for _, s := range jobs {
		objs = append(objs, s.TrainJob)
	}
	// The apiserver defaults a job before the webhooks see it.
	if err := render.ApplyDefaults(objs...); err != nil {
		return nil, &InputError{Source: "defaulting", Err: err}
	}
	p := ev.pipeline()
	type read struct {
		cluster pipeline.Cluster
		state   *input.QuotaState
	}
	clusters := map[string]read{}
	results := make([]Result, 0, len(jobs))
	for _, s := range jobs {
		ns := s.TrainJob.Namespace
		c, ok := clusters[ns]
		var err error
		if !ok {
			// Read once per namespace: the jobs are judged against the same
			// moment of the cluster.
			if c.cluster, c.state, err = clusterFor(ctx, ns); err == nil {
				clusters[ns] = c
			}
		}
		var v *pipeline.Evaluation
		req := ev.Request(s.TrainJob)
		if err == nil {
			v, err = p.RunAgainst(ctx, c.cluster, req, pipeline.Admit, c.state)
		}
		results = append(results, resultOf(s, req, v, err))
	}
	return results, nil
}
