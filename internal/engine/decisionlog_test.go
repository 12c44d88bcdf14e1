package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
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

// decisionLogFields are the decision log's field names as shippers and SIEM
// queries read them: renaming one breaks them, so it must be deliberate
// (this list, docs/audit.md and the release notes together).
var decisionLogFields = []string{
	"time", "user", "kind", "namespace", "trainJob", "runtime", "operation", "dryRunRequest",
	"policySetVersion", "allowed", "violations", "mutations", "dryRunMutations", "latencySeconds",
	"phase", "reservation", "input",
}

// jsonFields are the JSON names of t's fields.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// TestDecisionLogSchema fails when a decision log field is renamed, added or
// removed without the list above and docs/audit.md's table ("Fields").
func TestDecisionLogSchema(t *testing.T) {
	got := jsonFields(reflect.TypeFor[DecisionLogEntry]())
	if diff := cmp.Diff(decisionLogFields, got); diff != "" {
		t.Errorf("decision log fields (-documented +DecisionLogEntry):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"policy", "action", "field", "message"}, jsonFields(reflect.TypeFor[Violation]())); diff != "" {
		t.Errorf("violation fields (-documented +Violation):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"policy", "target", "replicatedJob", "field", "key", "value"}, jsonFields(reflect.TypeFor[Change]())); diff != "" {
		t.Errorf("mutation fields (-documented +Change):\n%s", diff)
	}
	doc := section(t, "../../docs/audit.md", "### Fields")
	documented := regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\|").FindAllStringSubmatch(doc, -1)
	var names []string
	for _, m := range documented {
		names = append(names, m[1])
	}
	if diff := cmp.Diff(decisionLogFields, names); diff != "" {
		t.Errorf("docs/audit.md's decision log table (-want +documented):\n%s", diff)
	}
	for _, sub := range []string{"`policy`, `action`", "`policy`, `target` (`trainJob` or `podTemplate`), `replicatedJob`, `field`, `key`, `value`"} {
		if !strings.Contains(doc, sub) {
			t.Errorf("docs/audit.md's decision log table does not list %s", sub)
		}
	}
}

// section is the text of a markdown file from heading to the next heading
// of the same or a higher level.
func section(t *testing.T, path, heading string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q", path, heading)
	}
	level := strings.Index(heading, " ")
	for _, l := range []string{"\n" + strings.Repeat("#", level) + " ", "\n" + strings.Repeat("#", level-1) + " "} {
		if i := strings.Index(rest, l); i >= 0 && level > 1 {
			rest = rest[:i]
		}
	}
	return rest
}

// fluentBitPipeline is the part of Fluent Bit's YAML configuration format
// the shipping example uses: the pipeline's inputs, filters and outputs,
// each a plugin's name and its properties.
type fluentBitPipeline struct {
	Pipeline struct {
		Inputs  []map[string]any `json:"inputs"`
		Filters []map[string]any `json:"filters"`
		Outputs []map[string]any `json:"outputs"`
	} `json:"pipeline"`
}

// fluentBitProperties are the properties each plugin of the example may
// set (Fluent Bit's documentation of tail, grep, parser and http).
var fluentBitProperties = map[string][]string{
	"tail":   {"name", "tag", "path", "multiline.parser", "read_from_head"},
	"grep":   {"name", "match", "regex", "exclude"},
	"parser": {"name", "match", "key_name", "parser", "reserve_data"},
	"http":   {"name", "match", "host", "port", "uri", "format", "json_date_key", "tls"},
}

// TestFluentBitConfig parses docs/audit.md's Fluent Bit example strictly,
// and checks it keeps the decision log: the stdout stream, parsed as JSON.
func TestFluentBitConfig(t *testing.T) {
	doc := section(t, "../../docs/audit.md", "### Shipping it")
	_, block, ok := strings.Cut(doc, "```yaml\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed {
		t.Fatal("docs/audit.md \"Shipping it\" has no yaml block")
	}
	var cfg fluentBitPipeline
	if err := yaml.UnmarshalStrict([]byte(block), &cfg); err != nil {
		t.Fatalf("the Fluent Bit example: %v", err)
	}
	p := cfg.Pipeline
	if len(p.Inputs) != 1 || len(p.Filters) != 2 || len(p.Outputs) != 1 {
		t.Fatalf("want 1 input, 2 filters, 1 output; got %+v", p)
	}
	for _, plugin := range append(append(append([]map[string]any{}, p.Inputs...), p.Filters...), p.Outputs...) {
		name, _ := plugin["name"].(string)
		allowed, known := fluentBitProperties[name]
		if !known {
			t.Errorf("plugin %q is not one the example documents", name)
		}
		for k := range plugin {
			if !slices.Contains(allowed, k) {
				t.Errorf("plugin %s: unknown property %q", name, k)
			}
		}
	}
	tag := p.Inputs[0]["tag"]
	for _, f := range append(p.Filters, p.Outputs...) {
		if f["match"] != tag {
			t.Errorf("%s matches %v, not the input's tag %v", f["name"], f["match"], tag)
		}
	}
	if p.Filters[0]["regex"] != "stream ^stdout$" || p.Filters[1]["key_name"] != "log" || p.Filters[1]["parser"] != "json" {
		t.Errorf("the filters must keep stdout and parse its log as JSON: %+v", p.Filters)
	}
	if path, _ := p.Inputs[0]["path"].(string); !strings.Contains(path, "_mpiguard-system_mpiguard-") {
		t.Errorf("the input tails %q, not the mpiguard container's log", path)
	}
}
