package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The example of docs/policies.md "Writing a policy": one new policy in a
// folder of its own, laid over the embedded ones.
const examplePolicies = "../../docs/examples/my-policies"

// --policies adds a policy to the embedded set: the new one denies, and the
// embedded ones (and their library, which the new one imports) still apply.
func TestPoliciesAddAPolicy(t *testing.T) {
	var out, stderr bytes.Buffer
	o := checkOptions{files: []string{examplePolicies + "/max-nodes/samples/denied-too-many-nodes.yaml"}, policies: examplePolicies, output: "text", showPatches: true}
	err := runCheck(context.Background(), o, nil, &out, &stderr)
	if exitOf(err) != 1 {
		t.Fatalf("exit = %d (%v), want 1\n%s", exitOf(err), err, out.String())
	}
	for _, want := range []string{
		"deny   max-nodes: spec.trainer.numNodes: TrainJob asks for 20 hostfile nodes but at most 16 are allowed",
		"patch  max-duration: spec.activeDeadlineSeconds = 86400",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not contain %q:\n%s", want, out.String())
		}
	}
}

// A module in the package of an embedded policy replaces that policy alone,
// as a ConfigMap does at run time.
func TestPoliciesOverrideAPolicy(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "max-duration"), 0o755); err != nil {
		t.Fatal(err)
	}
	quiet := "package mpiguard.policies.max_duration\n\n# No deadline set, none denied.\ndeny := set()\n"
	if err := os.WriteFile(filepath.Join(dir, "max-duration", "max_duration.rego"), []byte(quiet), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	o := checkOptions{files: []string{samples + "max-duration/samples/denied-over-ceiling.yaml"}, policies: dir, output: "text", showPatches: true}
	err := runCheck(context.Background(), o, nil, &out, &stderr)
	if exitOf(err) != 0 {
		t.Fatalf("exit = %d (%v), want 0: the replaced max-duration denies nothing\n%s", exitOf(err), err, out.String())
	}
	if strings.Contains(out.String(), "max-duration") {
		t.Errorf("the embedded max-duration still applies:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "patch  istio-opt-out:") {
		t.Errorf("the other embedded policies no longer apply:\n%s", out.String())
	}
}
