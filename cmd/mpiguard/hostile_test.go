package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// TestCheckRefusesHostileInput runs the hostile-input table (test/fixtures
// hostile.go) through `mpiguard check -f -`: each case must exit 1 (denied)
// or 2 (invalid input) as the table says, with the field named in what check
// prints, quickly, and without a panic. Nothing may be allowed.
func TestCheckRefusesHostileInput(t *testing.T) {
	cases := fixtures.HostileCases()
	if len(cases) < 30 {
		t.Fatalf("the table has %d cases, want at least 30", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			var out, stderr bytes.Buffer
			start := time.Now()
			err := runCheck(context.Background(), checkOptions{files: []string{"-"}, output: "text"},
				strings.NewReader(tc.Docs(fixtures.HostileNamespace, fixtures.HostileRuntime)), &out, &stderr)
			took := time.Since(start)
			text := out.String() + stderr.String()
			if err != nil {
				text += "\nerror: " + err.Error()
			}
			if got := exitOf(err); got != tc.Check.Exit {
				t.Errorf("exit %d, want %d (0 means silently allowed)\n%s", got, tc.Check.Exit, clip(text))
			}
			for _, want := range tc.Check.Contains {
				if !strings.Contains(text, want) {
					t.Errorf("check's answer does not contain %q:\n%s", want, clip(text))
				}
			}
			if took > 20*time.Second {
				t.Errorf("check took %v", took)
			}
		})
	}
}

// clip keeps failure output readable when the input echoed is huge.
func clip(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}
