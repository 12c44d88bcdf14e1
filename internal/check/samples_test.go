package check

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/policies"
)

// copyPolicies copies the embedded policies tree into a temporary directory
// and applies edit to it.
func copyPolicies(t *testing.T, edit func(dir string)) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, policies.FS); err != nil {
		t.Fatal(err)
	}
	edit(dir)
	return dir
}

func replaceIn(t *testing.T, file, old, replacement string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not contain %q", file, old)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), old, replacement, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func evaluatorFor(t *testing.T, dir string) *Evaluator {
	t.Helper()
	ctx := context.Background()
	set, err := engine.LoadPolicySet(os.DirFS(dir), policies.ParametersFile)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(ctx, set, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rnd, err := render.NewRenderer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &Evaluator{Engine: eng, Renderer: rnd}
}

func failuresOf(cases []SampleCase, file string) []string {
	for _, c := range cases {
		if c.File == file {
			return c.Failures
		}
	}
	return nil
}

func containsFailure(failures []string, want string) bool {
	for _, f := range failures {
		if strings.Contains(f, want) {
			return true
		}
	}
	return false
}

// A policy that matches nothing must make its sample suite fail, even where
// its mutations keep working.
func TestPolicyMatchingNothingFailsItsSamples(t *testing.T) {
	dir := copyPolicies(t, func(dir string) {
		replaceIn(t, filepath.Join(dir, "istio-opt-out/istio_opt_out.rego"), "value in values", `value == "no value matches this"`)
	})
	cases, err := RunSamples(context.Background(), os.DirFS(dir), evaluatorFor(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	failures := failuresOf(cases, "istio-opt-out/samples/denied-runtime-opts-in.yaml")
	if !containsFailure(failures, "no TrainJob is denied by policy istio-opt-out") {
		t.Errorf("failures %q do not report that the policy matches nothing", failures)
	}
	for _, c := range cases {
		if c.Policy != "istio-opt-out" && c.Failed() {
			t.Errorf("unrelated sample %s failed: %q", c.File, c.Failures)
		}
	}
}

func TestFolderNeedsAllowedAndDeniedSamples(t *testing.T) {
	dir := copyPolicies(t, func(dir string) {
		denied, err := filepath.Glob(filepath.Join(dir, "istio-opt-out/samples", "denied-*"))
		if err != nil || len(denied) == 0 {
			t.Fatalf("no denied samples to remove (%v)", err)
		}
		for _, f := range denied {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	})
	cases, err := RunSamples(context.Background(), os.DirFS(dir), evaluatorFor(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if f := failuresOf(cases, "istio-opt-out/samples"); !containsFailure(f, "no denied-*.yaml sample") {
		t.Errorf("folder failures %q do not ask for a denied sample", f)
	}
}

func TestChangedOutputFailsAgainstWant(t *testing.T) {
	dir := copyPolicies(t, func(dir string) {
		replaceIn(t, filepath.Join(dir, "aggregate-quota/aggregate_quota.rego"), `"ask an admin to raise the quota"`, `"ask someone"`)
	})
	cases, err := RunSamples(context.Background(), os.DirFS(dir), evaluatorFor(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	f := failuresOf(cases, "aggregate-quota/samples/denied-gpus-over-quota.yaml")
	if !containsFailure(f, "output differs from denied-gpus-over-quota.want, line by line") {
		t.Errorf("failures %q do not report the changed message", f)
	}
}

func TestPolicyWithoutRegoTestsFails(t *testing.T) {
	dir := copyPolicies(t, func(dir string) {
		if err := os.Remove(filepath.Join(dir, "istio-opt-out/istio_opt_out_test.rego")); err != nil {
			t.Fatal(err)
		}
	})
	results, err := RunRegoTests(context.Background(), os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range results {
		if r.Package == "istio-opt-out" && r.Fail {
			found = true
		}
	}
	if !found {
		t.Error("a policy folder without tests passed")
	}
}

func TestPolicyWithoutSamplesFails(t *testing.T) {
	dir := copyPolicies(t, func(dir string) {
		if err := os.RemoveAll(filepath.Join(dir, "istio-opt-out/samples")); err != nil {
			t.Fatal(err)
		}
	})
	cases, err := RunSamples(context.Background(), os.DirFS(dir), evaluatorFor(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if f := failuresOf(cases, "istio-opt-out"); !containsFailure(f, "policy istio-opt-out has no istio-opt-out/samples folder") {
		t.Errorf("failures %q do not report the missing samples", f)
	}
}
