package check

import (
	"sort"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/runtimes/template"
)

// RuntimeTemplatePolicy names the results of runtime templates, as audit
// reports them.
const RuntimeTemplatePolicy = template.Policy

// ValidateRuntimes judges every ClusterTrainingRuntime and TrainingRuntime of
// the documents (not the curated ones, which mpiguard publishes) as the
// runtime-template webhook judges its create: defaulted as the apiserver
// defaults it, then template.Validate, the webhook's own validation. A
// runtime the webhook would refuse is denied with the webhook's message
// (Refusal) and one violation per error (a verdict, not unreadable input:
// Error stays empty); the webhook's warnings are warn violations. Results
// are in the order of kind, namespace and name.
func ValidateRuntimes(c *Cluster) ([]Result, error) {
	var objs []client.Object
	for _, rt := range c.ClusterRuntimes {
		objs = append(objs, rt.DeepCopy())
	}
	for _, rt := range c.Runtimes {
		objs = append(objs, rt.DeepCopy())
	}
	if len(objs) == 0 {
		return nil, nil
	}
	if err := render.ApplyDefaults(objs...); err != nil {
		return nil, &InputError{Source: "defaulting", Err: err}
	}
	results := make([]Result, 0, len(objs))
	for _, obj := range objs {
		var (
			kind string
			meta *metav1.ObjectMeta
			spec *trainer.TrainingRuntimeSpec
		)
		switch rt := obj.(type) {
		case *trainer.ClusterTrainingRuntime:
			kind, meta, spec = trainer.ClusterTrainingRuntimeKind, &rt.ObjectMeta, &rt.Spec
		case *trainer.TrainingRuntime:
			kind, meta, spec = trainer.TrainingRuntimeKind, &rt.ObjectMeta, &rt.Spec
		}
		key := objectKey(obj)
		errs, warnings := template.Validate(meta, spec)
		res := Result{Runtime: key, Source: c.sources[key], Governed: true, Allowed: len(errs) == 0, Violations: []engine.Violation{}}
		if len(errs) > 0 {
			res.Refusal = pipeline.WithDocsLink(template.Policy, template.Refusal(kind, meta.Name, errs))
		}
		res.Violations = append(res.Violations, runtimeViolations(errs, engine.EnforceDeny)...)
		res.Violations = append(res.Violations, runtimeViolations(warnings, engine.EnforceWarn)...)
		results = append(results, res)
	}
	sort.Slice(results, func(i, j int) bool { return results[i].Runtime < results[j].Runtime })
	return results, nil
}

// RuntimeResults are the results of c's runtime templates that check shows:
// beside TrainJobs only those the webhook would refuse (the jobs are the
// point, and a refused runtime could not be there for them); alone, every
// runtime, with the webhook's warnings.
func RuntimeResults(c *Cluster) ([]Result, error) {
	all, err := ValidateRuntimes(c)
	if err != nil || len(c.TrainJobs) == 0 {
		return all, err
	}
	var refused []Result
	for _, r := range all {
		if !r.Allowed {
			refused = append(refused, r)
		}
	}
	return refused, nil
}

// runtimeViolations are errs as violations whose lines ("field: message")
// read as the webhook words them: an error as in its refusal, a warning as
// in its admission warnings.
func runtimeViolations(errs field.ErrorList, action engine.Enforcement) []engine.Violation {
	out := make([]engine.Violation, 0, len(errs))
	for _, e := range errs {
		msg := e.Detail
		if action == engine.EnforceDeny {
			msg = e.ErrorBody()
		}
		out = append(out, engine.Violation{Policy: RuntimeTemplatePolicy, Action: action, Field: e.Field, Message: msg})
	}
	return out
}
