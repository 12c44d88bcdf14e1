package check

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mpiguard/mpiguard/internal/engine"
)

// WriteJSON writes one result at a time what json.Encoder writes for the
// whole array at once, byte for byte (HTML characters escaped alike).
func TestWriteJSONIsTheEncodersOutput(t *testing.T) {
	denied := Result{
		TrainJob: "team-a/big", Source: "jobs.yaml", Governed: true,
		Violations: []engine.Violation{{Policy: "aggregate-quota", Action: "deny", Field: "spec.trainer", Message: `needs 8 <GPUs> & "more"`}},
		Mutations:  []engine.Change{{Policy: "istio-opt-out", Target: "trainJob", Field: "metadata.annotations", Value: map[string]any{"a": []any{1, "b"}}}},
	}
	for _, tc := range []struct {
		name    string
		results []Result
	}{
		{"nil", nil},
		{"none", []Result{}},
		{"one", []Result{denied}},
		{"three", []Result{denied, {TrainJob: "team-a/small", Allowed: true, Violations: []engine.Violation{}}, {TrainJob: "team-b/x", Error: "spec.runtimeRef: not found"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			if err := enc.Encode(tc.results); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&got, tc.results); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.String(), got.String()); diff != "" {
				t.Errorf("WriteJSON differs from json.Encoder (-encoder +WriteJSON):\n%s", diff)
			}
		})
	}
}
