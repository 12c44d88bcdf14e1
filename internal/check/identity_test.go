package check

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRuntimesOfTwoClustersAreNotConfused: runtimes of the same name and
// the same UID and resourceVersion in the documents, but different Worker
// images, judged by one evaluator one cluster after the other (check
// --each-file): each job is rendered from its own cluster's runtime, not
// from the template the renderer cached for the other's (identity.go).
func TestRuntimesOfTwoClustersAreNotConfused(t *testing.T) {
	ev := checkEvaluator(t)
	var got []string
	for _, image := range []string{"example.com/mpi:a", "example.com/mpi:b"} {
		c := NewCluster()
		if err := c.Read("cluster-"+image, strings.NewReader(identityCluster(image))); err != nil {
			t.Fatal(err)
		}
		results, err := ev.Evaluate(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			for _, v := range r.Violations {
				if v.Policy == "worker-image" {
					got = append(got, v.Message[strings.LastIndex(v.Message, "keep image"):][:len("keep image \"example.com/mpi:a\"")])
				}
			}
		}
	}
	want := []string{`keep image "example.com/mpi:a"`, `keep image "example.com/mpi:b"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("worker-image warnings (-want +got):\n%s", diff)
	}
}

// identityCluster is a runtime whose Workers run image, as `kubectl get -o
// yaml` writes it (with a UID and resourceVersion), and a job asking for
// another image.
func identityCluster(image string) string {
	return `apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: openmpi
  uid: 6b2a0a8e-0000-4000-8000-000000000001
  resourceVersion: "42"
spec:
  mlPolicy:
    numNodes: 1
    mpi: {numProcPerNode: 1, mpiImplementation: OpenMPI, sshAuthMountPath: /home/mpiuser/.ssh, runLauncherAsNode: false}
  template:
    spec:
      replicatedJobs:
        - name: launcher
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              template:
                spec:
                  containers: [{name: launcher, image: example.com/launcher:1}]
        - name: node
          template:
            spec:
              template:
                spec:
                  containers: [{name: node, image: "` + image + `"}]
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: job, namespace: team-a}
spec:
  activeDeadlineSeconds: 3600
  runtimeRef: {name: openmpi}
  trainer: {image: example.com/mine:1, numNodes: 1, numProcPerNode: 1}
`
}
