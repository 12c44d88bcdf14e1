package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// decisionLines decides an allowed and a denied request with verbosity v and
// returns the decision log's lines.
func decisionLines(t *testing.T, v Verbosity) []map[string]any {
	t.Helper()
	var log bytes.Buffer
	e, err := New(context.Background(), demoSet(2, PolicySettings{}), Options{DecisionLog: &log, DecisionLogVerbosity: v})
	if err != nil {
		t.Fatal(err)
	}
	decide(t, e, mpiRequest("team-a", 1)) // allowed
	decide(t, e, mpiRequest("team-a", 4)) // denied
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestDecisionLogVerbosity(t *testing.T) {
	t.Run("denials", func(t *testing.T) {
		lines := decisionLines(t, LogDenials)
		if len(lines) != 1 || lines[0]["allowed"] != false {
			t.Errorf("want the denial only, got %v", lines)
		}
	})
	t.Run("decisions", func(t *testing.T) {
		lines := decisionLines(t, LogDecisions)
		if len(lines) != 2 {
			t.Fatalf("want 2 lines, got %v", lines)
		}
		for _, l := range lines {
			if _, ok := l["input"]; ok {
				t.Errorf("input logged at verbosity decisions: %v", l)
			}
		}
	})
	t.Run("input", func(t *testing.T) {
		lines := decisionLines(t, LogInput)
		if len(lines) != 2 {
			t.Fatalf("want 2 lines, got %v", lines)
		}
		for _, l := range lines {
			in, ok := l["input"].(map[string]any)
			if !ok {
				t.Fatalf("no input: %v", l)
			}
			if _, ok := in["parameters"]; ok {
				t.Errorf("the input carries the policy set's parameters")
			}
			if tj, _ := in["trainJob"].(map[string]any); tj["name"] != "train" {
				t.Errorf("input.trainJob = %v", in["trainJob"])
			}
		}
	})
}

func TestParseVerbosity(t *testing.T) {
	for in, want := range map[string]Verbosity{"": LogDecisions, "denials": LogDenials, "decisions": LogDecisions, "input": LogInput} {
		if got, err := ParseVerbosity(in); err != nil || got != want {
			t.Errorf("ParseVerbosity(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseVerbosity("all"); err == nil || !strings.Contains(err.Error(), "denials") {
		t.Errorf("ParseVerbosity(all) = %v, want an error listing the values", err)
	}
}
