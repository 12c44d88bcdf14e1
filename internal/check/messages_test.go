package check

import (
	"context"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/mpiguard/mpiguard/internal/pipeline"
)

// MessageBudget is the most a violation line ("[policy] field: message")
// of a denial or warning may take: Events and Kueue's admission check
// messages keep 1 KB, and the engine appends a short link to the policy's
// docs to every message (about 100 bytes are left for it).
const MessageBudget = 1024 - 100

// sampleViolations runs every sample of the policies tree at dir, each file a
// cluster of its own, and calls f with every violation line, its sample and
// its policy.
func sampleViolations(t *testing.T, dir string, f func(sample, policy, line string)) {
	t.Helper()
	ev := evaluatorFor(t, dir)
	files, err := filepath.Glob(filepath.Join(dir, "*", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples under %s: %v", dir, err)
	}
	lines := 0
	for _, file := range files {
		cluster := NewCluster()
		if err := cluster.ReadFile(file); err != nil {
			t.Fatal(err)
		}
		results, err := ev.Evaluate(context.Background(), cluster)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, r := range results {
			for _, v := range r.Violations {
				lines++
				f(file, v.Policy, pipeline.ViolationLine(v))
			}
		}
	}
	if lines == 0 {
		t.Fatal("the samples gave no violation at all: nothing was checked")
	}
}

// Every message a sample draws fits what Events and Kueue keep, with room
// for the docs link: a message cut at 1 KB loses its fix, which comes last.
func TestEverySampleMessageFitsAnEvent(t *testing.T) {
	sampleViolations(t, "../../policies", func(sample, policy, line string) {
		if len(line) > MessageBudget {
			t.Errorf("%s: a %s message of %d bytes, over the %d an Event keeps with its docs link:\n%s", sample, policy, len(line), MessageBudget, line)
		}
	})
}

// podsAsNodes is a count of "nodes" that is not of hostfile nodes: the
// vocabulary (README.md, "Vocabulary") never calls pods nodes, and
// spec.trainer.numNodes counts hostfile nodes (every Worker, and the Launcher
// when it runs as a node), not Workers.
var podsAsNodes = regexp.MustCompile(`(^|[^-\w])(\d+) nodes\b`)

// Every message a sample draws says "hostfile nodes" where it counts
// spec.trainer.numNodes, never a bare "N nodes" that reads as pods or
// Kubernetes nodes.
func TestEverySampleMessageSaysHostfileNodes(t *testing.T) {
	sampleViolations(t, "../../policies", func(sample, policy, line string) {
		if m := podsAsNodes.FindString(line); m != "" {
			t.Errorf("%s: a %s message counts %q: say \"hostfile nodes\" (spec.trainer.numNodes) or Workers:\n%s", sample, policy, m, line)
		}
	})
}
