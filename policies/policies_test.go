package policies_test

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/mpiguard/mpiguard/internal/check"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/policies"
)

var update = flag.Bool("update", false, "rewrite the samples' .want files from the current output (review the diff!)")

// TestRegoUnitTests runs every test_* rule of every policy with OPA's tester.
func TestRegoUnitTests(t *testing.T) {
	results, err := check.RunRegoTests(context.Background(), policies.FS)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) == 0 {
		t.Fatal("no Rego tests found")
	}
	for _, r := range results {
		if !r.Pass() {
			t.Errorf("%s.%s (%v): %v", r.Package, r.Name, r.Location, r.Error)
		}
	}
}

// TestSamples runs every policy's samples through the real renderer and engine
// and compares the output with the .want files.
func TestSamples(t *testing.T) {
	ctx := context.Background()
	eng, err := engine.NewDefault(ctx, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rnd, err := render.NewRenderer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev := &check.Evaluator{Engine: eng, Renderer: rnd, User: "sample-suite"}
	cases, err := check.RunSamples(ctx, os.DirFS("."), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no samples found")
	}
	for _, c := range cases {
		t.Run(c.File, func(t *testing.T) {
			if *update && c.WantFile != "" && c.Got != "" {
				if err := os.WriteFile(c.WantFile, []byte(c.Got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, f := range c.Failures {
				t.Error(f)
			}
		})
	}
}
