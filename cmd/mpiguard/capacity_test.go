package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// `mpiguard check` with Node documents: a Worker larger than every node is
// denied; a gang larger than the nodes warns, and is denied with
// gangEnforcement: deny; without Node documents the check is skipped and
// says so.
func TestCheckJudgesNodeCapacityFromNodeDocuments(t *testing.T) {
	dir := samples + "node-capacity/samples/"
	check := func(t *testing.T, file, params string) (string, string, int) {
		t.Helper()
		var out, stderr bytes.Buffer
		err := runCheck(context.Background(), checkOptions{files: []string{file}, parameters: params, output: "text"}, nil, &out, &stderr)
		return out.String(), stderr.String(), exitOf(err)
	}
	out, _, code := check(t, dir+"denied-worker-larger-than-nodes.yaml", "")
	if code != 1 || !strings.Contains(out, "deny   node-capacity: spec.trainer.resourcesPerNode: each Worker pod asks 16 nvidia.com/gpu; the largest of the 4 cluster nodes it may run on has 8 nvidia.com/gpu") {
		t.Errorf("a Worker larger than every node: exit %d\n%s", code, out)
	}
	out, _, code = check(t, dir+"warned-gang-larger-than-nodes.yaml", "")
	if code != 0 || !strings.Contains(out, "warn   node-capacity: spec.trainer.numNodes: the 6 Workers and the Launcher cannot all run at once") {
		t.Errorf("a gang larger than the nodes, by default: exit %d\n%s", code, out)
	}
	params := t.TempDir() + "/params.yaml"
	if err := os.WriteFile(params, []byte("policies:\n  node-capacity:\n    parameters: {gangEnforcement: deny}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = check(t, dir+"warned-gang-larger-than-nodes.yaml", params)
	if code != 1 || !strings.Contains(out, "deny   node-capacity: spec.trainer.numNodes: the 6 Workers and the Launcher cannot all run at once") {
		t.Errorf("a gang larger than the nodes, gangEnforcement deny: exit %d\n%s", code, out)
	}
	// Without the Node documents: nothing is judged, and check says why.
	sample, err := os.ReadFile(dir + "denied-worker-larger-than-nodes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, doc := range strings.Split(string(sample), "---\n") {
		if !strings.Contains(doc, "kind: Node\n") {
			kept = append(kept, doc)
		}
	}
	var stdout, stderr bytes.Buffer
	err = runCheck(context.Background(), checkOptions{files: []string{"-"}, output: "text"}, strings.NewReader(strings.Join(kept, "---\n")), &stdout, &stderr)
	if exitOf(err) != 0 || strings.Contains(stdout.String(), "node-capacity") {
		t.Errorf("without Node documents: exit %d\n%s", exitOf(err), stdout.String())
	}
	if !strings.Contains(stderr.String(), "note: no Node is among the documents read: the node-capacity check was skipped") {
		t.Errorf("stderr does not say the node check was skipped:\n%s", stderr.String())
	}
}
