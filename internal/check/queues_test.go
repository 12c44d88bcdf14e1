package check

import (
	"context"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// A Volcano job judged offline: against the documents' Queues (one written
// without a status read as Open, as Volcano's controller makes it), or, when
// the documents have none, against Volcano's own queue "default", saying so.
func TestVolcanoQueueDocuments(t *testing.T) {
	curated, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	// The curated Volcano variant puts the PodGroup in queue "default": 4
	// pods with 2 GPUs each, 8 GPUs.
	const job = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: mnist, namespace: team-a}\n" +
		"spec: {runtimeRef: {name: mpiguard-openmpi-volcano}, trainer: {numNodes: 4, numProcPerNode: 2, resourcesPerNode: {limits: {nvidia.com/gpu: 2}}}}\n"
	queue := func(capability string) string {
		return "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 1, capability: {nvidia.com/gpu: \"" + capability + "\"}}\n---\n"
	}
	ev := evaluatorFor(t, "../../policies")
	for _, tc := range []struct {
		name        string
		docs        string
		wantAllowed bool
		wantAssumed bool
		wantDenial  string
	}{
		{name: "no Queue documents: Volcano's default queue", docs: job, wantAllowed: true, wantAssumed: true},
		{name: "a Queue without status is Open", docs: queue("8") + job, wantAllowed: true},
		{name: "the documents' queue is too small", docs: queue("4") + job, wantDenial: `the job's gang needs 8 nvidia.com/gpu (all 4 pods start together or none does) but Volcano queue "default" can hold at most 4`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCluster()
			if err := c.Read("in.yaml", strings.NewReader(tc.docs)); err != nil {
				t.Fatal(err)
			}
			c.Curated = map[string]*trainer.ClusterTrainingRuntime{}
			for _, rt := range curated {
				c.Curated[rt.Name] = rt.DeepCopy()
			}
			results, err := ev.Evaluate(context.Background(), c)
			if err != nil || len(results) != 1 || results[0].Error != "" {
				t.Fatalf("Evaluate: %v %+v", err, results)
			}
			r := results[0]
			if r.Allowed != tc.wantAllowed || c.DefaultQueueAssumed != tc.wantAssumed {
				t.Errorf("allowed %v, default queue assumed %v: want %v, %v (%v)", r.Allowed, c.DefaultQueueAssumed, tc.wantAllowed, tc.wantAssumed, r.Violations)
			}
			if tc.wantDenial != "" && (len(r.Violations) == 0 || !strings.Contains(r.Violations[0].Message, tc.wantDenial)) {
				t.Errorf("violations %v, want one saying %q", r.Violations, tc.wantDenial)
			}
		})
	}
}
