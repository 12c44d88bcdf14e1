package pipeline

import (
	"io/fs"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/policies"
)

func TestDenialMessage(t *testing.T) {
	job := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "big"}}
	v := &Evaluation{Governed: true, TrainJob: job, Decision: &engine.Decision{Violations: []engine.Violation{
		{Policy: "aggregate-quota", Action: engine.EnforceDeny, Field: "spec.trainer", Message: "TrainJob needs 12 nvidia.com/gpu"},
		{Policy: "max-duration", Action: engine.EnforceWarn, Message: "a warning"},
		{Policy: "slots-gpus", Action: engine.EnforceDeny, Message: "no field"},
	}}}
	got := v.DenialMessage()
	want := "TrainJob team-a/big violates 2 mpiguard policies:\n- [aggregate-quota] spec.trainer: TrainJob needs 12 nvidia.com/gpu (see " + DocsLink("aggregate-quota") + ")\n- [slots-gpus] no field (see " + DocsLink("slots-gpus") + ")"
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
	const where = "in the Report"
	tail := "… (cut; the full text is " + where + ")"
	for _, tc := range []struct {
		name string
		note string
	}{
		{"short", "denied"},
		{"exactly the limit", strings.Repeat("a", MaxEventNote)},
		{"long", strings.Repeat("a", 5000)},
		{"long, multi-byte characters across the cut", strings.Repeat("é", 3000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EventNote(tc.note, where)
			switch {
			case len(got) > MaxEventNote:
				t.Errorf("%d bytes, over the apiserver's %d", len(got), MaxEventNote)
			case !utf8.ValidString(got):
				t.Errorf("cut inside a character: %q", got[len(got)-len(tail)-4:])
			case len(tc.note) <= MaxEventNote && got != tc.note:
				t.Errorf("a note within the limit was changed: %q", got)
			case len(tc.note) > MaxEventNote && (!strings.HasSuffix(got, tail) || !strings.HasPrefix(tc.note, strings.TrimSuffix(got, tail))):
				t.Errorf("cut note %q is not a prefix of the note followed by %q", got, tail)
			}
		})
	}
}
