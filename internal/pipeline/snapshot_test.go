package pipeline

import (
	"context"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// snapshotCluster is memCluster whose jobs have a runtime snapshot, counting
// how often it is read (each read is a GET to the apiserver).
type snapshotCluster struct {
	memCluster
	snapshot client.Object
	reads    *int
}

func (s snapshotCluster) Snapshot(context.Context, *trainer.TrainJob) (client.Object, error) {
	*s.reads++
	return s.snapshot.DeepCopyObject().(client.Object), nil
}

// A stored job is judged on its snapshot, not its runtime, and one request
// reads the snapshot once (Prepare, then judged without reading it again); a create
// has none to read.
func TestStoredJobsAreJudgedOnTheirSnapshot(t *testing.T) {
	p := testPipeline(t)
	snap := fixtures.GPUWorkersRuntime("gpu", "8").Cluster() // the runtime has 4 GPUs per Worker now
	if err := render.ApplyDefaults(snap); err != nil {
		t.Fatal(err)
	}
	snap.SetGroupVersionKind(trainer.GroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind))
	reads := 0
	c := snapshotCluster{memCluster: testCluster(t), snapshot: snap, reads: &reads}
	ctx := context.Background()

	old := fixtures.TrainJob("team-a", "run", "gpu").NumNodes(2).NumProcPerNode(8).Suspend(true).Obj()
	old.UID = "uid-1"
	resumed := old.DeepCopy()
	resumed.Spec.Suspend = ptr.To(false)
	req := &Request{Operation: engine.Update, TrainJob: resumed, OldTrainJob: old}
	v, err := p.Run(ctx, c, req, Admit)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.View.GPUsPerWorker; got != 8 {
		t.Errorf("GPUs per Worker = %d, want the snapshot's 8 (the runtime's is 4)", got)
	}
	for _, viol := range v.Decision.Violations {
		if viol.Policy == "slots-gpus" { // 8 Slots per worker against the runtime's 4 GPUs
			t.Errorf("judged on the runtime's numbers: %s", viol.Message)
		}
	}
	if reads != 1 {
		t.Errorf("snapshot read %d times for one request, want 1", reads)
	}

	reads = 0
	if _, err := p.Run(ctx, c, &Request{Operation: engine.Create, TrainJob: resumed}, Validate); err != nil {
		t.Fatal(err)
	}
	if reads != 0 {
		t.Errorf("a create read the snapshot %d times, want 0", reads)
	}
}

// TestSnapshotIdentityIsItsContent: the runtime a snapshot holds is named by
// the snapshot's data, so jobs with the same snapshot share the renderer's
// merged template, and an edited snapshot is never rendered from the
// original's.
func TestSnapshotIdentityIsItsContent(t *testing.T) {
	data := func(name string) map[string]string {
		return map[string]string{"runtime": "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata:\n  name: " + name + "\n"}
	}
	a := ParseSnapshot(data("mpi"), trainer.ClusterTrainingRuntimeKind)
	b := ParseSnapshot(data("mpi"), trainer.ClusterTrainingRuntimeKind)
	edited := ParseSnapshot(data("mpi-edited"), trainer.ClusterTrainingRuntimeKind)
	if a.Reason != "" || a.Runtime.GetUID() == "" || a.Runtime.GetResourceVersion() == "" {
		t.Fatalf("parsed %+v: want a runtime with a UID and resourceVersion", a)
	}
	if a.Runtime.GetUID() != b.Runtime.GetUID() {
		t.Errorf("the same data named %q and %q", a.Runtime.GetUID(), b.Runtime.GetUID())
	}
	if a.Runtime.GetUID() == edited.Runtime.GetUID() {
		t.Errorf("an edited snapshot has the original's name %q", a.Runtime.GetUID())
	}
	if missing := ParseSnapshot(map[string]string{}, trainer.ClusterTrainingRuntimeKind); missing.Runtime != nil || missing.Reason == "" {
		t.Errorf("no data key: %+v, want a reason", missing)
	}
}

// A snapshot whose quantity would take the parser hours (its ConfigMap is
// the tenant's to edit) is refused with the field, never decoded.
func TestSnapshotWithASlowQuantityIsRefused(t *testing.T) {
	data := map[string]string{"runtime": `apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: gpu}
spec:
  template:
    spec:
      replicatedJobs:
      - name: node
        template: {spec: {template: {spec: {containers: [{name: node, resources: {requests: {cpu: "1e-2147483647"}}}]}}}}
`}
	got := ParseSnapshot(data, trainer.ClusterTrainingRuntimeKind)
	if got.Runtime != nil || !strings.Contains(got.Reason, "resources.requests.cpu") {
		t.Fatalf("ParseSnapshot = %+v, want a reason naming resources.requests.cpu", got)
	}
}
