package audit

import (
	"context"
	"fmt"
	"sort"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reservations"
)

// ReservationReader reads a namespace's QuotaReservation
// (store.Store.Get in internal/reservations/store; a namespace without one reads as empty).
type ReservationReader interface {
	Get(ctx context.Context, namespace string, live bool) (*v1alpha1.QuotaReservation, error)
}

// Auditor runs what is stored in the cluster through the admission pipeline.
// The controller gives it the manager's cache; the command line a plain
// client in both Reader and Live.
type Auditor struct {
	// Pipeline is the admission pipeline, with the engine serving today's
	// policies.
	Pipeline *pipeline.Pipeline
	// Cluster reads what a decision depends on (pipeline.ClientCluster):
	// its Reader lists TrainJobs, pods and runtimes; its Live reads
	// ResourceQuotas as a quota decision does (reservations.LiveQuotas).
	Cluster pipeline.ClientCluster
	// Reservations reads what admitted jobs hold (nil: nothing is reserved).
	Reservations ReservationReader
	// snapshots, when set, remembers the runtime snapshots read
	// (snapshots.go): the controller's audits; the command line reads them
	// all.
	snapshots *snapshotReads
}

// cluster is what jobs are judged with, before quota state is added.
func (a *Auditor) cluster() pipeline.Cluster {
	if a.snapshots == nil {
		return a.Cluster
	}
	return snapshotCluster{ClientCluster: a.Cluster, snapshots: a.snapshots}
}

// Namespace judges every TrainJob that has not finished and every
// TrainingRuntime of namespace ns. Results are sorted by object and policy.
// An error means the namespace could not be read; a job that could not be
// judged is an Error result, not an error.
func (a *Auditor) Namespace(ctx context.Context, ns string) ([]Result, error) {
	c := a.Cluster
	var jobs trainer.TrainJobList
	if err := c.Reader.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the TrainJobs of %q: %w", ns, err)
	}
	existing, err := reservations.ReadExisting(ctx, c.Reader, ns, time.Now())
	if err != nil {
		return nil, err
	}
	policies := a.Pipeline.Engine().Policies()
	var (
		out     []Result
		waiting *input.QuotaState // read once, for the first job that waits
	)
	for i := range jobs.Items {
		job := &jobs.Items[i]
		start := time.Now()
		req, v, err := a.judge(ctx, job, existing, &waiting)
		if req == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, JobResults(job, policies, v, err)...)
		if err := a.yield(ctx, time.Since(start)); err != nil {
			return nil, err
		}
	}
	var runtimes trainer.TrainingRuntimeList
	if err := c.Reader.List(ctx, &runtimes, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the TrainingRuntimes of %q: %w", ns, err)
	}
	for i := range runtimes.Items {
		rt := &runtimes.Items[i]
		out = append(out, RuntimeResults(RuntimeRef(rt), &rt.ObjectMeta, &rt.Spec)...)
	}
	sortResults(out)
	return out, nil
}

// Job judges one stored TrainJob as audit does (Request): a job that waits
// for pods as its resume, against its namespace's quotas and what admitted
// jobs hold of them; a running one as the update that leaves it as it is.
// `mpiguard explain` calls it. req is nil for a job that is not judged
// (finished, or being deleted); err with a nil req means the namespace's
// pods or quota state could not be read, with a req that the job could not
// be judged (admission would refuse its resume with it).
func (a *Auditor) Job(ctx context.Context, job *trainer.TrainJob) (req *pipeline.Request, v *pipeline.Evaluation, err error) {
	existing, err := reservations.ReadExisting(ctx, a.Cluster.Reader, job.Namespace, time.Now())
	if err != nil {
		return nil, nil, err
	}
	var waiting *input.QuotaState
	return a.judge(ctx, job, existing, &waiting)
}

// judge is Job with the namespace's charged pods read (existing) and the
// quota state of its waiting jobs read once for all of them (*waiting, read
// at the first job that waits).
func (a *Auditor) judge(ctx context.Context, job *trainer.TrainJob, existing reservations.Existing, waiting **input.QuotaState) (*pipeline.Request, *pipeline.Evaluation, error) {
	running := Running(job, existing)
	req := Request(job, running)
	if req == nil {
		return nil, nil, nil
	}
	var against *input.QuotaState // a running job: its namespace's quotas, nothing reserved
	if !running {
		if *waiting == nil {
			state, err := a.quotaState(ctx, job.Namespace)
			if err != nil {
				return nil, nil, err
			}
			*waiting = state
		}
		against = *waiting
	}
	v, err := a.Pipeline.RunAgainst(ctx, a.cluster(), req, pipeline.Validate, against)
	return req, v, err
}

// yield pauses after a judgement that took took while the webhooks are busy
// (schedule.go); it ends early with ctx.
func (a *Auditor) yield(ctx context.Context, took time.Duration) error {
	pause := yieldFor(time.Now(), a.Pipeline.LastAdmission(), took)
	if pause == 0 {
		return nil
	}
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ClusterRuntimes judges every ClusterTrainingRuntime.
func (a *Auditor) ClusterRuntimes(ctx context.Context) ([]Result, error) {
	var runtimes trainer.ClusterTrainingRuntimeList
	if err := a.Cluster.Reader.List(ctx, &runtimes); err != nil {
		return nil, fmt.Errorf("listing the ClusterTrainingRuntimes: %w", err)
	}
	var out []Result
	for i := range runtimes.Items {
		rt := &runtimes.Items[i]
		out = append(out, RuntimeResults(ClusterRuntimeRef(rt), &rt.ObjectMeta, &rt.Spec)...)
	}
	sortResults(out)
	return out, nil
}

// QuotaState is the cluster a job of ns that would start pods now is read
// from and the quota state it is judged against (quotaState): `mpiguard
// check --from-cluster` judges new jobs with them.
func (a *Auditor) QuotaState(ctx context.Context, ns string) (pipeline.Cluster, *input.QuotaState, error) {
	state, err := a.quotaState(ctx, ns)
	return a.cluster(), state, err
}

// quotaState is the quota state waiting jobs of ns are judged against: the
// namespace's quotas and the reservations on them, read as the quota
// transaction reads them (reservations.ReadState), so the numbers are the
// ones admission would give.
func (a *Auditor) quotaState(ctx context.Context, ns string) (*input.QuotaState, error) {
	c := a.Cluster
	res := &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Namespace: ns}}
	if a.Reservations != nil {
		var err error
		if res, err = a.Reservations.Get(ctx, ns, false); err != nil {
			return nil, err
		}
	}
	nsc, err := c.Namespace(ctx, ns)
	if err != nil {
		return nil, err
	}
	live := c.Live
	if live == nil {
		live = c.Reader
	}
	state, _, err := reservations.ReadState(ctx, c.Reader, live, ns, res, a.Pipeline.StoredRenderer(a.cluster(), nsc), false)
	return state, err
}

// sortResults orders results by kind, namespace, name and policy: reports
// list them in a stable order, so an audit that finds nothing new writes
// nothing new.
func sortResults(rs []Result) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Object.Kind != b.Object.Kind {
			return a.Object.Kind < b.Object.Kind
		}
		if a.Object.Namespace != b.Object.Namespace {
			return a.Object.Namespace < b.Object.Namespace
		}
		if a.Object.Name != b.Object.Name {
			return a.Object.Name < b.Object.Name
		}
		return a.Policy < b.Policy
	})
}
