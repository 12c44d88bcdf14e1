package render

import (
	"math"
	"testing"
)

// TestApplyDefaultsKeepsInt64 guards the defaulting round trip: the
// apiserver keeps integers exact, so must `mpiguard check`. Through float64,
// activeDeadlineSeconds 2^63-1 did not decode back (check exited 2 with a
// JSON error for a TrainJob the apiserver accepts) and 2^53+1 changed.
func TestApplyDefaultsKeepsInt64(t *testing.T) {
	for _, want := range []int64{math.MaxInt64, 1<<53 + 1, 1} {
		tj := trainJob(numNodes(1))
		tj.Spec.ActiveDeadlineSeconds = want
		if err := ApplyDefaults(tj); err != nil {
			t.Fatalf("activeDeadlineSeconds %d: %v", want, err)
		}
		if got := tj.Spec.ActiveDeadlineSeconds; got != want {
			t.Errorf("activeDeadlineSeconds %d became %d", want, got)
		}
		if tj.Spec.Suspend == nil || tj.Spec.RuntimeRef.Kind == nil {
			t.Errorf("defaults not applied: %+v", tj.Spec)
		}
	}
}
