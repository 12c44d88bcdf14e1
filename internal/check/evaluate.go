package check

import (
	"context"
	"fmt"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/capacity"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/jobstate"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/networkpolicies"
)

// Result is the admission outcome of one TrainJob.
type Result struct {
	// TrainJob is "namespace/name"; Source the document it came from.
	TrainJob string `json:"trainJob"`
	Source   string `json:"source"`
	Allowed  bool   `json:"allowed"`
	// Governed is false for TrainJobs the policies do not apply to (non-MPI).
	Governed   bool               `json:"governed"`
	Violations []engine.Violation `json:"violations"`
	// Mutations are the changes the mutating webhook would make.
	Mutations []engine.Change `json:"mutations,omitempty"`
	// Error is set when the TrainJob could not be evaluated (admission would
	// reject it with this error).
	Error string `json:"error,omitempty"`
	// NetworkPolicy says which per-job NetworkPolicy template the job gets
	// and what it leaves closed; set for governed jobs when the Evaluator
	// describes NetworkPolicies.
	NetworkPolicy string `json:"networkPolicy,omitempty"`
	// JudgedAs is the write the TrainJob was judged as: JudgedAsCreate, or
	// JudgedAsResume for a suspended one (Request).
	JudgedAs string `json:"judgedAs,omitempty"`
	// Runtime is set, and TrainJob empty, for the result of a runtime
	// template (ValidateRuntimes): `ClusterTrainingRuntime "name"` or
	// `TrainingRuntime "namespace/name"`. Refusal is the runtime-template
	// webhook's message when it would refuse the runtime.
	Runtime string `json:"runtime,omitempty"`
	Refusal string `json:"refusal,omitempty"`
}

// The writes a TrainJob of the input is judged as (Result.JudgedAs).
const (
	JudgedAsCreate = "create"
	JudgedAsResume = "resume"
)

// Request is the admission request a TrainJob of the input is judged as:
// the write that decides whether it starts. A job that is not suspended is a
// CREATE. With SuspendedAsResume, a suspended one, stored (kubectl get -o yaml) or about to be
// submitted to a queue, starts nothing when it is created: every quota
// policy defers to its resume (Kueue admits a job by flipping
// spec.suspend), so it is judged as that resume, an UPDATE from the job
// suspended to the job running, with every policy, as audit judges a
// waiting job.
func (ev *Evaluator) Request(tj *trainer.TrainJob) *pipeline.Request {
	if !ev.SuspendedAsResume || !jobstate.Suspended(tj) {
		return &pipeline.Request{Operation: engine.Create, User: ev.User, TrainJob: tj}
	}
	old, resumed := jobstate.AsResume(tj)
	return &pipeline.Request{Operation: engine.Update, User: ev.User, TrainJob: resumed, OldTrainJob: old}
}

// Evaluator runs TrainJobs through the engine and renderer the webhooks use.
type Evaluator struct {
	Engine   *engine.Engine
	Renderer *render.Renderer
	// User is the requester recorded in decisions.
	User string
	// NetworkPolicies, when set, are the per-job NetworkPolicy controller's
	// options: each governed Result then says which template its job gets.
	NetworkPolicies *networkpolicies.Options
	// SuspendedAsResume judges a suspended TrainJob as its resume (Request),
	// as `mpiguard check` does; false judges it as the CREATE it is, as the
	// differential suite compares with the webhooks' answer to that create.
	SuspendedAsResume bool
}

// pipeline is the admission pipeline the Evaluator judges with.
func (ev *Evaluator) pipeline() *pipeline.Pipeline {
	p := pipeline.New(ev.Renderer, ev.Engine)
	if ev.NetworkPolicies != nil {
		p.DescribeNetworkPolicies(*ev.NetworkPolicies)
	}
	return p
}

// Evaluate decides every TrainJob of the cluster as a CREATE (a suspended
// one as its resume, Request), in document order, through the admission pipeline the webhooks use (stage Admit: the
// mutation is applied and the mutated job judged, as the apiserver runs the
// two webhooks). TrainJobs created earlier count against quotas as they would
// in a cluster before their pods exist: each one admission lets through that
// starts pods (not suspended), MPI or not (a TrainJob mpiguard does not
// govern still creates pods the quota will charge); a suspended job judged
// as its resume holds nothing, as it holds nothing until it is resumed.
func (ev *Evaluator) Evaluate(ctx context.Context, c *Cluster) ([]Result, error) {
	if err := applyDefaults(c); err != nil {
		return nil, err
	}
	identify(c) // identity.go
	p := ev.pipeline()
	reader := NewReader(c).(*clusterReader)
	results := make([]Result, 0, len(c.TrainJobs))
	for _, s := range c.TrainJobs {
		tj := s.TrainJob
		req := ev.Request(tj)
		starts := req.OldTrainJob == nil && jobstate.StartsPods(req.OldTrainJob, req.TrainJob)
		v, err := p.RunAgainst(ctx, reader, req, pipeline.Admit, reader.quotaState(tj.Namespace))
		if err == nil && v.Governed && jobstate.StartsPods(req.OldTrainJob, req.TrainJob) {
			// The validating webhook reads what earlier jobs hold before
			// deciding; one it cannot render fails the decision.
			err = reader.unrenderable[tj.Namespace]
		}
		res := resultOf(s, req, v, err)
		if res.Error == "" && res.Allowed && starts {
			reader.hold(ctx, p, tj, v)
		}
		results = append(results, res)
	}
	return results, nil
}

// resultOf is what the pipeline made of job s judged as req: its
// evaluation v, or err.
func resultOf(s SourcedTrainJob, req *pipeline.Request, v *pipeline.Evaluation, err error) Result {
	tj := s.TrainJob
	res := Result{TrainJob: tj.Namespace + "/" + tj.Name, Source: s.Source, Violations: []engine.Violation{}, JudgedAs: JudgedAsCreate}
	if req.OldTrainJob != nil {
		res.JudgedAs = JudgedAsResume
	}
	switch {
	case err != nil:
		res.Error = err.Error()
	case v.Governed:
		res.Governed, res.Allowed = true, v.Allowed()
		res.Mutations = v.Mutation.Changes
		res.NetworkPolicy = v.NetworkPolicy
		if len(v.Decision.Violations) > 0 {
			res.Violations = v.Decision.Violations
		}
	default:
		res.Allowed = true
	}
	return res
}

// NewReader is the cluster the documents describe, as the pipeline reads it,
// nothing reserved.
func NewReader(c *Cluster) pipeline.Cluster {
	return &clusterReader{Cluster: c, reserved: map[string][]quota.Reservation{}, unrenderable: map[string]error{}}
}

// clusterReader is the cluster the documents describe, as the pipeline
// reads it, with the jobs admitted so far reserved.
type clusterReader struct {
	*Cluster
	reserved map[string][]quota.Reservation
	// unrenderable is, per namespace, why a job created earlier that holds
	// quota could not be rendered.
	unrenderable map[string]error
	// nodes are the Node documents by shape, made once (nodes.go).
	nodes *capacity.Summary
}

// hold counts an admitted job that starts pods against its namespace's
// quotas: the job as judged (v) when mpiguard governs it, else as stored.
func (r *clusterReader) hold(ctx context.Context, p *pipeline.Pipeline, tj *trainer.TrainJob, v *pipeline.Evaluation) {
	view := v.View
	if !v.Governed {
		ns, _ := r.Namespace(ctx, tj.Namespace)
		var err error
		if view, err = p.RenderStored(ctx, r, tj, ns); err != nil {
			if r.unrenderable[tj.Namespace] == nil {
				r.unrenderable[tj.Namespace] = fmt.Errorf("rendering TrainJob %s, which holds quota in %q: %w", tj.Name, tj.Namespace, err)
			}
			return
		}
	}
	key := tj.Namespace + "/" + tj.Name
	r.reserved[tj.Namespace] = append(r.reserved[tj.Namespace], quota.Reservation{TrainJob: key, UID: tj.UID, Parts: quota.PartsOf(view)})
}

// quotaState is what a job of namespace ns is judged against: its quotas
// and the jobs admitted so far.
func (r *clusterReader) quotaState(ns string) *input.QuotaState {
	return input.NewQuotaState(r.quotasIn(ns), r.reserved[ns], nil)
}

var _ pipeline.Cluster = (*clusterReader)(nil)

// JobSet: documents hold no JobSets; every job is rendered from its runtime.
func (r *clusterReader) JobSet(context.Context, *trainer.TrainJob) (*jobsetv1alpha2.JobSet, error) {
	return nil, nil
}

// Snapshot: documents hold no runtime snapshots; every job is rendered from
// its runtime, as at its create.
func (r *clusterReader) Snapshot(context.Context, *trainer.TrainJob) (client.Object, error) {
	return nil, nil
}

func (r *clusterReader) Runtime(_ context.Context, tj *trainer.TrainJob) (client.Object, error) {
	return r.runtimeOf(tj)
}

func (r *clusterReader) Namespace(_ context.Context, name string) (*pipeline.Namespace, error) {
	return &pipeline.Namespace{
		Namespace:       r.namespace(name),
		Quotas:          r.quotasIn(name),
		LimitRanges:     r.limitRangesIn(name),
		RuntimeClasses:  r.RuntimeClasses,
		PriorityClasses: r.PriorityClasses,
		ServiceAccounts: r.serviceAccountsIn(name),
	}, nil
}

func applyDefaults(c *Cluster) error {
	objs := c.runtimeObjects() // identity.go
	for _, s := range c.TrainJobs {
		objs = append(objs, s.TrainJob)
	}
	for i := range c.LimitRanges {
		objs = append(objs, &c.LimitRanges[i])
	}
	if err := render.ApplyDefaults(objs...); err != nil {
		return &InputError{Source: "defaulting", Err: err}
	}
	return nil
}

// runtimeOf finds the runtime a TrainJob references.
func (c *Cluster) runtimeOf(tj *trainer.TrainJob) (client.Object, error) {
	ref := tj.Spec.RuntimeRef
	kind := ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind)
	var obj client.Object
	switch kind {
	case trainer.ClusterTrainingRuntimeKind:
		if r, ok := c.ClusterRuntimes[ref.Name]; ok {
			obj = r
		} else if r, ok := c.Curated[ref.Name]; ok {
			obj = r
			if !slices.Contains(c.CuratedUsed, ref.Name) {
				c.CuratedUsed = append(c.CuratedUsed, ref.Name)
			}
		}
	case trainer.TrainingRuntimeKind:
		if r, ok := c.Runtimes[tj.Namespace+"/"+ref.Name]; ok {
			obj = r
		}
	default:
		return nil, fmt.Errorf("spec.runtimeRef.kind %q is not ClusterTrainingRuntime or TrainingRuntime", kind)
	}
	if obj == nil {
		return nil, fmt.Errorf("%s %q (spec.runtimeRef) is not among the documents read; add it with -f", kind, ref.Name)
	}
	// The kind policies read (input.runtime.kind), as the webhooks set it.
	obj.GetObjectKind().SetGroupVersionKind(trainer.GroupVersion.WithKind(kind))
	return obj, nil
}

func (c *Cluster) namespace(name string) *corev1.Namespace {
	if ns, ok := c.Namespaces[name]; ok {
		return ns
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func (c *Cluster) quotasIn(ns string) []corev1.ResourceQuota { return inNamespace(c.Quotas, ns) }

func (c *Cluster) serviceAccountsIn(ns string) []corev1.ServiceAccount {
	return inNamespace(c.ServiceAccounts, ns)
}

func (c *Cluster) limitRangesIn(ns string) []corev1.LimitRange { return inNamespace(c.LimitRanges, ns) }

// inNamespace are the objects of namespace ns among objs.
func inNamespace[T any, P interface {
	*T
	GetNamespace() string
}](objs []T, ns string) []T {
	var out []T
	for i := range objs {
		if P(&objs[i]).GetNamespace() == ns {
			out = append(out, objs[i])
		}
	}
	return out
}
