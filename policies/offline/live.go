package offline

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/policies/engine"
	"github.com/mpiguard/mpiguard/policies/pipeline"
	"github.com/mpiguard/mpiguard/policies/render"
)

// StateFor returns the quota state a new TrainJob of namespace ns is judged
// against in the live cluster: its quotas with their usage and what admitted
// jobs hold, read as the validating webhook reads them
// (audit.Auditor.QuotaState).
type StateFor func(ctx context.Context, ns string) (*pipeline.QuotaState, error)

// EvaluateLive decides each TrainJob as a CREATE in the live cluster c
// reads, against the quota state stateFor reads, through the admission
// pipeline (stage Admit), as the apiserver would run the two webhooks if it
// were submitted now. Each job is judged on its own: unlike Evaluate, jobs earlier in the input do not count
// against quotas (they are not in the cluster). A job of the same name that
// is stored already is left out of what its namespace holds, as a job being
// decided is left out of its own decision.
func (ev *Evaluator) EvaluateLive(ctx context.Context, jobs []SourcedTrainJob, c pipeline.Cluster, stateFor StateFor) ([]Result, error) {
	objs := make([]client.Object, 0, len(jobs))
	for _, s := range jobs {
		objs = append(objs, s.TrainJob)
	}
	// The apiserver defaults a job before the webhooks see it.
	if err := render.ApplyDefaults(objs...); err != nil {
		return nil, &InputError{Source: "defaulting", Err: err}
	}
	p := pipeline.New(ev.Renderer, ev.Engine)
	states := map[string]*pipeline.QuotaState{}
	results := make([]Result, 0, len(jobs))
	for _, s := range jobs {
		ns := s.TrainJob.Namespace
		state, ok := states[ns]
		var err error
		if !ok {
			// Read once per namespace: the jobs are judged against the same
			// moment of the cluster.
			if state, err = stateFor(ctx, ns); err == nil {
				states[ns] = state
			}
		}
		var v *pipeline.Verdict
		if err == nil {
			v, err = p.RunAgainst(ctx, c, &pipeline.Request{Operation: engine.Create, User: ev.User, TrainJob: s.TrainJob}, pipeline.Admit, state)
		}
		results = append(results, resultOf(s, v, err))
	}
	return results, nil
}
