package render

import (
	"context"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// A quantity larger than Kubernetes quantities may be ("1e10000000", which
// the CRDs' pattern allows) is refused at once, naming its field, in the
// TrainJob or in its runtime; before the check, exact arithmetic on it ran
// for minutes. Amounts up to the limit ("8Ei", capped at 2^63-1 by the
// parser) still render.
func TestRenderRefusesQuantitiesKubernetesCannotHold(t *testing.T) {
	r := renderer(t)
	cases := map[string]struct {
		runtime  *trainer.ClusterTrainingRuntime
		trainJob *trainer.TrainJob
		want     string // "" renders
	}{
		"the largest quantity renders": {
			runtime:  mpiRuntime(),
			trainJob: trainJob(numNodes(2), resourcesPerNode(rl("memory=8Ei", "cpu=9223372036854775807"), nil)),
		},
		"a TrainJob's request": {
			runtime:  mpiRuntime(),
			trainJob: trainJob(numNodes(2), resourcesPerNode(rl("nvidia.com/gpu=1e10000000"), nil)),
			want:     `TrainJob team-a/job: spec.trainer.resourcesPerNode.requests[nvidia.com/gpu]: Invalid value: "10e9999999": larger than Kubernetes quantities may be`,
		},
		"a negative one as large": {
			runtime:  mpiRuntime(),
			trainJob: trainJob(numNodes(2), resourcesPerNode(nil, rl("cpu=-1e30"))),
			want:     `spec.trainer.resourcesPerNode.limits[cpu]: Invalid value: "-1e30"`,
		},
		"a runtime's container": {
			runtime:  mpiRuntime(containerResources("node", rl("memory=1e400"), nil)),
			trainJob: trainJob(numNodes(2)),
			want:     `ClusterTrainingRuntime openmpi: spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests[memory]: Invalid value: "10e399"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := ApplyDefaults(tc.runtime, tc.trainJob); err != nil {
				t.Fatalf("ApplyDefaults: %v", err)
			}
			// Unchecked, "1e10000000" runs past the test's timeout.
			_, err := r.Render(context.Background(), Input{TrainJob: tc.trainJob, Runtime: tc.runtime})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Render: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Render error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A runtime version read from the apiserver (UID and resourceVersion) has
// its quantities walked once; a new version of it is walked again, and a
// version refused once is refused every time.
func TestRuntimeQuantitiesCheckedPerVersion(t *testing.T) {
	r := renderer(t)
	render := func(rt *trainer.ClusterTrainingRuntime) error {
		t.Helper()
		job := trainJob(numNodes(2))
		if err := ApplyDefaults(rt, job); err != nil {
			t.Fatalf("ApplyDefaults: %v", err)
		}
		_, err := r.Render(context.Background(), Input{TrainJob: job, Runtime: rt})
		return err
	}
	good := mpiRuntime()
	good.UID, good.ResourceVersion = "runtime-uid", "1"
	if err := render(good); err != nil {
		t.Fatalf("Render with version 1: %v", err)
	}
	huge := mpiRuntime(containerResources("node", rl("memory=1e400"), nil))
	huge.UID, huge.ResourceVersion = "runtime-uid", "2"
	for range 2 {
		if err := render(huge); err == nil || !strings.Contains(err.Error(), "larger than Kubernetes quantities may be") {
			t.Fatalf("Render with version 2 (memory 1e400) = %v, want the quantity refused", err)
		}
	}
	if err := render(good); err != nil {
		t.Fatalf("Render with version 1 again: %v", err)
	}
}
