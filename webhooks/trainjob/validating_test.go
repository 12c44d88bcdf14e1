package trainjob

import (
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mpiguard/mpiguard/policies"
	"github.com/mpiguard/mpiguard/policies/engine"
)

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
