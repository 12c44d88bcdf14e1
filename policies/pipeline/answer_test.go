package pipeline

import (
	"io/fs"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/policies"
	"github.com/mpiguard/mpiguard/policies/engine"
)

func TestDenialMessage(t *testing.T) {
	job := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "big"}}
	v := &Verdict{Governed: true, TrainJob: job, Decision: &engine.Decision{Violations: []engine.Violation{
		{Policy: "aggregate-quota", Action: engine.EnforceDeny, Field: "spec.trainer", Message: "TrainJob needs 12 nvidia.com/gpu"},
		{Policy: "max-duration", Action: engine.EnforceWarn, Message: "a warning"},
		{Policy: "slots-gpus", Action: engine.EnforceDeny, Message: "no field"},
	}}}
	got := v.DenialMessage()
	want := "TrainJob team-a/big violates 2 mpiguard policies:\n- [aggregate-quota] spec.trainer: TrainJob needs 12 nvidia.com/gpu\n- [slots-gpus] no field"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestDeferDenials(t *testing.T) {
	deny := func(policy string) engine.Violation {
		return engine.Violation{Policy: policy, Action: engine.EnforceDeny, Message: "m"}
	}
	warn := engine.Violation{Policy: "w", Action: engine.EnforceWarn, Message: "already a warning"}
	for _, tc := range []struct {
		name        string
		in          []engine.Violation
		wantAllowed bool
		want        []engine.Violation
	}{
		{"nothing to defer", []engine.Violation{warn}, true, []engine.Violation{warn}},
		{"denials wait for the resume", []engine.Violation{deny("data-residency"), warn}, true, []engine.Violation{
			{Policy: "data-residency", Action: engine.EnforceWarn, Message: "denied when the job is resumed: m"}, warn}},
		{"a posing entry is denied now", []engine.Violation{deny("data-residency"), deny(mpiguardEntryPolicy)}, false, []engine.Violation{
			{Policy: "data-residency", Action: engine.EnforceWarn, Message: "denied when the job is resumed: m"}, deny(mpiguardEntryPolicy)}},
	} {
		d := &engine.Decision{Violations: tc.in}
		deferDenials(d)
		if d.Allowed != tc.wantAllowed {
			t.Errorf("%s: allowed %t, want %t", tc.name, d.Allowed, tc.wantAllowed)
		}
		if diff := cmp.Diff(tc.want, d.Violations); diff != "" {
			t.Errorf("%s: violations (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestMpiguardEntryPolicyExists ties mpiguardEntryPolicy to the embedded
// policy it names: renamed there and not here, deferDenials would defer the
// denial of an entry posing as mpiguard's, and TestDeferDenials, which uses
// the constant, would not notice.
func TestMpiguardEntryPolicyExists(t *testing.T) {
	if _, err := fs.Stat(policies.FS, mpiguardEntryPolicy); err != nil {
		t.Fatalf("no embedded policy %q: %v", mpiguardEntryPolicy, err)
	}
}

func TestEventNote(t *testing.T) {
	short := "fits"
	if got := EventNote(short, "elsewhere"); got != short {
		t.Errorf("a short note changed: %q", got)
	}
	// Multi-byte runes across the cut: the result must stay valid UTF-8.
	long := strings.Repeat("é", MaxEventNote)
	got := EventNote(long, "in the Report")
	if len(got) > MaxEventNote || !utf8.ValidString(got) || !strings.HasSuffix(got, "… (cut; the full text is in the Report)") {
		t.Errorf("EventNote(%d bytes) = %d bytes, valid UTF-8 %v, ends %q", len(long), len(got), utf8.ValidString(got), got[max(len(got)-50, 0):])
	}
}
