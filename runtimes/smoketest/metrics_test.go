package smoketest

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	api "github.com/mpiguard/mpiguard/api/v1alpha1"
)

// Each verdict finish records is counted once, by runtime, result and reason:
// MpiguardRuntimeTestFailed (config/prometheus/rule.yaml) reads the failures.
func TestFinishCountsTheVerdict(t *testing.T) {
	r := &Reconciler{recorder: events.NewFakeRecorder(10), now: func() time.Time { return time.Unix(0, 0) }}
	failed := verdicts.WithLabelValues("metrics-test-runtime", "failed", api.ReasonTrainJobFailed)
	succeeded := verdicts.WithLabelValues("metrics-test-runtime", "succeeded", api.ReasonPassed)
	before, beforeOK := testutil.ToFloat64(failed), testutil.ToFloat64(succeeded)

	rt := &api.RuntimeTest{Spec: api.RuntimeTestSpec{RuntimeRef: api.RuntimeRef{Name: "metrics-test-runtime"}}}
	r.finish(rt, metav1.Condition{Type: api.ConditionSucceeded, Status: metav1.ConditionFalse, Reason: api.ReasonTrainJobFailed})
	if got := testutil.ToFloat64(failed) - before; got != 1 {
		t.Errorf("a failed verdict counted %v times, want 1", got)
	}
	rt = &api.RuntimeTest{Spec: api.RuntimeTestSpec{RuntimeRef: api.RuntimeRef{Name: "metrics-test-runtime"}}}
	r.finish(rt, metav1.Condition{Type: api.ConditionSucceeded, Status: metav1.ConditionTrue, Reason: api.ReasonPassed})
	if got := testutil.ToFloat64(succeeded) - beforeOK; got != 1 {
		t.Errorf("a passed verdict counted %v times, want 1", got)
	}
	if got := testutil.ToFloat64(failed) - before; got != 1 {
		t.Errorf("a passed verdict counted as failed")
	}
}
