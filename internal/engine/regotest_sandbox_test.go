package engine_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/mpiguard/mpiguard/internal/check"
)

// `mpiguard policy test` runs the Rego unit tests inside the engine's
// sandbox: a refused builtin fails there, at load, with the engine's words,
// instead of passing its tests and being rejected by the engine afterwards.
func TestRegoTesterUsesTheSandbox(t *testing.T) {
	fsys := fstest.MapFS{
		"clock/clock.rego":      {Data: []byte("package mpiguard.policies.clock\n\ndeny contains \"late\" if time.now_ns() > 0\n")},
		"clock/clock_test.rego": {Data: []byte("package mpiguard.policies.clock_test\n\nimport data.mpiguard.policies.clock\n\ntest_late if {\n\tprint(\"print stays allowed\")\n\tclock.deny[\"late\"]\n}\n")},
	}
	_, err := check.RunRegoTests(context.Background(), fsys)
	want := "1 error occurred: clock/clock.rego:3: rego_type_error: builtin time.now_ns is not allowed by mpiguard's policy sandbox: it reads the clock: the same TrainJob would be decided differently over time"
	if err == nil {
		t.Fatal("the Rego tests of a policy calling time.now_ns ran")
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}

	fsys["clock/clock.rego"] = &fstest.MapFile{Data: []byte("package mpiguard.policies.clock\n\ndeny contains \"late\" if time.parse_rfc3339_ns(\"2026-01-01T00:00:00Z\") > 0\n")}
	results, err := check.RunRegoTests(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.Pass() {
			t.Errorf("%s.%s: %v", r.Package, r.Name, r.Error)
		}
	}
}
