package check

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// A TrainJob may name a curated runtime the documents do not define; a
// runtime the documents define comes first, and only the names taken from
// Curated are listed in CuratedUsed.
func TestCuratedRuntimesByName(t *testing.T) {
	curated, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	const job = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: mnist, namespace: team-a}\n" +
		"spec: {runtimeRef: {name: mpiguard-openmpi}, trainer: {numNodes: 4, numProcPerNode: 2, resourcesPerNode: {limits: {nvidia.com/gpu: 2}}}}\n"
	// A runtime of the documents with a curated name: one replicated job, no
	// MPI, so the TrainJob is not governed (a curated one is).
	const own = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata: {name: mpiguard-openmpi}\n" +
		"spec: {template: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {containers: [{name: node, image: busybox}]}}}}}]}}}\n"
	ev := evaluatorFor(t, "../../policies")
	for _, tc := range []struct {
		name         string
		docs         string
		curated      bool
		wantGoverned bool
		wantUsed     []string
		wantError    string
	}{
		{name: "curated runtime by name", docs: job, curated: true, wantGoverned: true, wantUsed: []string{"mpiguard-openmpi"}},
		{name: "the documents' runtime comes first", docs: own + "---\n" + job, curated: true},
		{name: "no curated runtimes", docs: job, wantError: `ClusterTrainingRuntime "mpiguard-openmpi" (spec.runtimeRef) is not among the documents read`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCluster()
			if err := c.Read("in.yaml", strings.NewReader(tc.docs)); err != nil {
				t.Fatal(err)
			}
			if tc.curated {
				c.Curated = map[string]*trainer.ClusterTrainingRuntime{}
				for _, rt := range curated {
					c.Curated[rt.Name] = rt.DeepCopy()
				}
			}
			results, err := ev.Evaluate(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != 1 {
				t.Fatalf("%d results, want 1", len(results))
			}
			r := results[0]
			if !strings.Contains(r.Error, tc.wantError) || (tc.wantError == "" && r.Error != "") {
				t.Errorf("error %q, want %q", r.Error, tc.wantError)
			}
			if tc.wantError == "" && (r.Governed != tc.wantGoverned || !r.Allowed) {
				t.Errorf("governed %v, allowed %v: want governed %v and allowed (%v)", r.Governed, r.Allowed, tc.wantGoverned, r.Violations)
			}
			if diff := cmp.Diff(tc.wantUsed, c.CuratedUsed); diff != "" {
				t.Errorf("CuratedUsed (-want +got):\n%s", diff)
			}
		})
	}
}
