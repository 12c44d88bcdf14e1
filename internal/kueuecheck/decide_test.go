package kueuecheck

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/pipeline"
)

func evaluation(allowed bool, violations ...engine.Violation) *pipeline.Evaluation {
	job := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "resnet"}}
	return &pipeline.Evaluation{Governed: true, TrainJob: job, Decision: &engine.Decision{Allowed: allowed, Governed: true, Violations: violations}}
}

func TestDecide(t *testing.T) {
	quotaDenial := engine.Violation{Policy: "aggregate-quota", Action: engine.EnforceDeny, Field: "spec.trainer", Message: "TrainJob needs 8 nvidia.com/gpu but ResourceQuota \"team-a\" has 4 of 16 free"}
	zoneDenial := engine.Violation{Policy: "data-residency", Action: engine.EnforceDeny, Field: "spec.runtimePatches", Message: "pods of node may run outside data residency zone \"eu\""}
	warning := engine.Violation{Policy: "max-duration", Action: engine.EnforceWarn, Message: "long"}
	busy := evaluation(false, quotaDenial)
	wantBusy := "TrainJob team-a/resnet violates 1 mpiguard policy:\n- [aggregate-quota] spec.trainer: " + quotaDenial.Message + " (see " + pipeline.DocsLink("aggregate-quota") + ")"
	wantZone := "TrainJob team-a/resnet violates 1 mpiguard policy:\n- [data-residency] spec.runtimePatches: " + zoneDenial.Message + " (see " + pipeline.DocsLink("data-residency") + ")"
	for _, tc := range []struct {
		name             string
		evaluation, idle *pipeline.Evaluation
		want             CheckState
	}{
		{"not governed: nothing to check", &pipeline.Evaluation{}, nil, CheckState{kueue.CheckStateReady, msgUngoverned}},
		{"allowed, warnings and all", evaluation(true, warning), nil, CheckState{kueue.CheckStateReady, msgAllowed}},
		{"denied, allowed in an idle namespace: quota is busy", busy, evaluation(true), CheckState{kueue.CheckStateRetry, wantBusy}},
		{"denied in an idle namespace too: waiting will not fix it", busy, evaluation(false, quotaDenial), CheckState{kueue.CheckStateRejected, wantBusy}},
		{"denied for residency", evaluation(false, zoneDenial), evaluation(false, zoneDenial), CheckState{kueue.CheckStateRejected, wantZone}},
		{"denied, idle not judged", evaluation(false, zoneDenial), nil, CheckState{kueue.CheckStateRejected, wantZone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, decide(tc.evaluation, tc.idle)); diff != "" {
				t.Errorf("decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideTruncatesToTheCRDsBound(t *testing.T) {
	long := engine.Violation{Policy: "p", Action: engine.EnforceDeny, Message: strings.Repeat("é", maxMessage)}
	got := decide(evaluation(false, long), nil).Message
	if len(got) > maxMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("message of %d bytes (valid UTF-8: %v), want at most %d ending in …", len(got), utf8.ValidString(got), maxMessage)
	}
}

func TestRequeueAfter(t *testing.T) {
	for _, tc := range []struct {
		retries int32
		want    time.Duration
	}{{0, 10 * time.Second}, {1, 20 * time.Second}, {3, 80 * time.Second}, {5, 5 * time.Minute}, {1000, 5 * time.Minute}} {
		if got := requeueAfter(tc.retries, 10*time.Second, 5*time.Minute); got != tc.want {
			t.Errorf("requeueAfter(%d) = %v, want %v", tc.retries, got, tc.want)
		}
	}
}

// TestSetupRefusesASubSecondBackoff: Kueue would requeue at once.
func TestSetupRefusesASubSecondBackoff(t *testing.T) {
	err := SetupWithManager(nil, nil, nil, Options{RetryBackoff: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "at least 1s") {
		t.Fatalf("SetupWithManager with a 500ms backoff: %v; want an error saying at least 1s", err)
	}
}

// MultiKueue's Workload on a worker cluster has the origin label and no
// owner until the job's copy exists; one with an owner is the copy's own.
func TestDispatchedBy(t *testing.T) {
	owned := []metav1.OwnerReference{{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind, Name: "resnet", UID: "u", Controller: ptr.To(true)}}
	for _, tc := range []struct {
		name       string
		labels     map[string]string
		owners     []metav1.OwnerReference
		wantOrigin string
		want       bool
	}{
		{"MultiKueue's, before the copy", map[string]string{kueue.MultiKueueOriginLabel: "multikueue"}, nil, "multikueue", true},
		{"MultiKueue's, owned by the copy", map[string]string{kueue.MultiKueueOriginLabel: "multikueue"}, owned, "multikueue", false},
		{"queued here", nil, owned, "", false},
		{"ownerless, not MultiKueue's", nil, nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, OwnerReferences: tc.owners}}
			origin, ok := dispatchedBy(wl)
			if ok != tc.want || (ok && origin != tc.wantOrigin) {
				t.Errorf("dispatchedBy = %q, %v; want %q, %v", origin, ok, tc.wantOrigin, tc.want)
			}
		})
	}
}
