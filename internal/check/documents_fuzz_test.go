package check

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/render"
)

// FuzzReadDocuments reads arbitrary multi-document streams as `mpiguard
// check -f` does. For every stream: no panic; a stream refused is refused
// with an *InputError (exit status 2, naming the document); a stream read
// gives TrainJobs with a name and namespace, and namespaced objects in a
// namespace.
func FuzzReadDocuments(f *testing.F) {
	addDocumentSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewCluster()
		if err := c.Read("fuzz.yaml", bytes.NewReader(data)); err != nil {
			var inputErr *InputError
			if !errors.As(err, &inputErr) {
				t.Fatalf("error %T is not an *InputError: %v", err, err)
			}
			return
		}
		checkCluster(t, c)
	})
}

// FuzzCheck evaluates arbitrary streams end to end as `mpiguard check`
// does: read, default, render, mutate, decide. For every stream: no panic;
// Evaluate fails only on input (an *InputError); there is one result per
// TrainJob, and a result is allowed only without an error and without a
// denying violation.
func FuzzCheck(f *testing.F) {
	addDocumentSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewCluster()
		if c.Read("fuzz.yaml", bytes.NewReader(data)) != nil {
			return
		}
		results, err := fuzzEvaluator(t).Evaluate(context.Background(), c)
		if err != nil {
			var inputErr *InputError
			if !errors.As(err, &inputErr) {
				t.Fatalf("Evaluate error %T is not an *InputError: %v", err, err)
			}
			return
		}
		if len(results) != len(c.TrainJobs) {
			t.Fatalf("%d results for %d TrainJobs", len(results), len(c.TrainJobs))
		}
		for _, r := range results {
			denied := false
			for _, v := range r.Violations {
				denied = denied || v.Action == engine.EnforceDeny
			}
			if r.Allowed && (r.Error != "" || denied) {
				t.Fatalf("%s allowed with error %q and violations %v", r.TrainJob, r.Error, r.Violations)
			}
		}
	})
}

func checkCluster(t *testing.T, c *Cluster) {
	t.Helper()
	for _, s := range c.TrainJobs {
		if s.TrainJob.Name == "" || s.TrainJob.Namespace == "" {
			t.Fatalf("%s: TrainJob without a name or namespace: %q/%q", s.Source, s.TrainJob.Namespace, s.TrainJob.Name)
		}
	}
	for _, q := range c.Quotas {
		if q.Namespace == "" {
			t.Fatalf("ResourceQuota %q without a namespace", q.Name)
		}
	}
	for _, l := range c.LimitRanges {
		if l.Namespace == "" {
			t.Fatalf("LimitRange %q without a namespace", l.Name)
		}
	}
	for key, r := range c.Runtimes {
		if r.Namespace == "" || key != r.Namespace+"/"+r.Name {
			t.Fatalf("TrainingRuntime %q kept as %q", r.Namespace+"/"+r.Name, key)
		}
	}
}

// addDocumentSeeds adds the policy samples, the curated runtimes and streams
// of the shapes the reader handles specially (Lists, comments, JSON).
func addDocumentSeeds(f *testing.F) {
	files, _ := filepath.Glob("../../policies/*/samples/*.yaml")
	curated, _ := filepath.Glob("../../runtimes/catalog/templates/*.yaml")
	if len(files) == 0 || len(curated) == 0 {
		f.Fatal("no policy samples or curated runtimes found")
	}
	for _, file := range append(files, curated...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, doc := range []string{
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: a}\n- apiVersion: v1\n  kind: List\n  items: []\n",
		"# only a comment\n---\n# another\n---\n",
		`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"j"},"spec":{"runtimeRef":{"name":"r"}}}`,
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n",
		"apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {}\n",
		"kind: Namespace\n",
		"- a\n- b\n",
		"apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\nspec: {hard: {pods: x}}\n",
	} {
		f.Add([]byte(doc))
	}
}

var evaluator struct {
	once sync.Once
	ev   *Evaluator
	err  error
}

// fuzzEvaluator is an evaluator with the embedded policies, built once per process.
func fuzzEvaluator(t *testing.T) *Evaluator {
	t.Helper()
	evaluator.once.Do(func() {
		ctx := context.Background()
		eng, err := engine.NewDefault(ctx, engine.Options{})
		if err != nil {
			evaluator.err = err
			return
		}
		r, err := render.NewRenderer(ctx)
		evaluator.ev, evaluator.err = &Evaluator{Engine: eng, Renderer: r, User: "fuzz"}, err
	})
	if evaluator.err != nil {
		t.Fatal(evaluator.err)
	}
	return evaluator.ev
}
