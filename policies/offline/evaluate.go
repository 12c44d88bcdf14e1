package offline

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/policies/engine"
	"github.com/mpiguard/mpiguard/policies/quota"
	"github.com/mpiguard/mpiguard/policies/render"
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
}

// Evaluator runs TrainJobs through the engine and renderer the webhooks use.
type Evaluator struct {
	Engine   *engine.Engine
	Renderer *render.Renderer
	// User is the requester recorded in decisions.
	User string
}

// Evaluate decides every TrainJob of the cluster as a CREATE, in document
// order. Like admission, it runs twice: the mutating pass computes the
// mutation, which is applied; the validating pass decides the mutated job.
// TrainJobs allowed earlier count against quotas as admitted jobs whose pods
// do not exist yet, as they would in a cluster.
func (ev *Evaluator) Evaluate(ctx context.Context, c *Cluster) ([]Result, error) {
	if err := applyDefaults(c); err != nil {
		return nil, err
	}
	reserved := map[string][]engine.Reservation{}
	results := make([]Result, 0, len(c.TrainJobs))
	for _, s := range c.TrainJobs {
		tj := s.TrainJob.DeepCopy()
		res := Result{TrainJob: tj.Namespace + "/" + tj.Name, Source: s.Source}
		view, err := ev.decide(ctx, c, tj, reserved[tj.Namespace], &res)
		if err != nil {
			res.Error = err.Error()
		} else if res.Allowed && res.Governed {
			reserved[tj.Namespace] = append(reserved[tj.Namespace], engine.Reservation{TrainJob: res.TrainJob, Parts: quota.PartsOf(view, c.quotasIn(tj.Namespace))})
		}
		if res.Violations == nil {
			res.Violations = []engine.Violation{}
		}
		results = append(results, res)
	}
	return results, nil
}

// decide fills res for one (defaulted, copied) TrainJob and returns its final view.
func (ev *Evaluator) decide(ctx context.Context, c *Cluster, tj *trainer.TrainJob, reserved []engine.Reservation, res *Result) (*render.JobView, error) {
	runtimeObj, meta, err := c.runtimeOf(tj)
	if err != nil {
		return nil, err
	}
	req := &engine.Request{
		Operation: engine.Create,
		User:      ev.User,
		TrainJob:  tj,
		Namespace: c.namespace(tj.Namespace),
		Quotas:    c.quotasIn(tj.Namespace),
		Reserved:  reserved,
		Runtime:   meta,
	}
	renderIn := render.Input{TrainJob: tj, Runtime: runtimeObj, LimitRanges: c.limitRangesIn(tj.Namespace), RuntimeClasses: c.RuntimeClasses,
		OwnManager: engine.AdmissionManager}

	// Mutating pass.
	if req.View, err = ev.Renderer.Render(ctx, renderIn); err != nil {
		return nil, err
	}
	m, err := ev.Engine.Mutations(ctx, req)
	if err != nil {
		return nil, err
	}
	res.Mutations = m.Changes
	if m.Apply(tj) {
		if req.View, err = ev.Renderer.Render(ctx, renderIn); err != nil {
			return nil, fmt.Errorf("after mpiguard's mutations: %w", err)
		}
	}
	// Validating pass over the (mutated) job, as the apiserver calls it.
	d, err := ev.Engine.Decide(ctx, req)
	if err != nil {
		return nil, err
	}
	res.Governed = d.Governed
	res.Allowed = d.Allowed
	res.Violations = d.Violations
	return req.View, nil
}

func applyDefaults(c *Cluster) error {
	objs := make([]client.Object, 0, len(c.TrainJobs)+len(c.ClusterRuntimes)+len(c.Runtimes)+len(c.LimitRanges))
	for _, s := range c.TrainJobs {
		objs = append(objs, s.TrainJob)
	}
	for _, r := range c.ClusterRuntimes {
		objs = append(objs, r)
	}
	for _, r := range c.Runtimes {
		objs = append(objs, r)
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
func (c *Cluster) runtimeOf(tj *trainer.TrainJob) (client.Object, engine.RuntimeMeta, error) {
	ref := tj.Spec.RuntimeRef
	kind := ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind)
	var obj client.Object
	switch kind {
	case trainer.ClusterTrainingRuntimeKind:
		if r, ok := c.ClusterRuntimes[ref.Name]; ok {
			obj = r
		}
	case trainer.TrainingRuntimeKind:
		if r, ok := c.Runtimes[tj.Namespace+"/"+ref.Name]; ok {
			obj = r
		}
	default:
		return nil, engine.RuntimeMeta{}, fmt.Errorf("spec.runtimeRef.kind %q is not ClusterTrainingRuntime or TrainingRuntime", kind)
	}
	if obj == nil {
		return nil, engine.RuntimeMeta{}, fmt.Errorf("%s %q (spec.runtimeRef) is not among the documents read; add it with -f", kind, ref.Name)
	}
	return obj, engine.RuntimeMeta{Kind: kind, Name: ref.Name, Labels: obj.GetLabels(), Annotations: obj.GetAnnotations()}, nil
}

func (c *Cluster) namespace(name string) *corev1.Namespace {
	if ns, ok := c.Namespaces[name]; ok {
		return ns
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func (c *Cluster) quotasIn(ns string) []corev1.ResourceQuota {
	var out []corev1.ResourceQuota
	for _, q := range c.Quotas {
		if q.Namespace == ns {
			out = append(out, q)
		}
	}
	return out
}

func (c *Cluster) limitRangesIn(ns string) []corev1.LimitRange {
	var out []corev1.LimitRange
	for _, l := range c.LimitRanges {
		if l.Namespace == ns {
			out = append(out, l)
		}
	}
	return out
}
