//go:build !checkonly

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/mpiguard/mpiguard/internal/check"
)

const convertCases = "../../internal/convert/testdata/"

// convert's exit status says whether every converted TrainJob would be
// admitted (0), any would be denied (1), or the input is unusable (2); its
// standard output is the documents alone, which check reads back.
func TestConvertExitCodesAndOutput(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     convertOptions
		stdin    string
		wantExit int
		wantErr  string // on standard error
	}{
		{"admitted", convertOptions{files: []string{convertCases + "upstream/pi.yaml"}}, "", 0, "TrainJob default/pi: ALLOWED"},
		{"denied by slots-gpus", convertOptions{files: []string{convertCases + "edge/multi-gpu.yaml"}}, "", 1, "deny   slots-gpus"},
		{"unknown field reported", convertOptions{files: []string{"-"}}, strings.Replace(piMPIJob, "slotsPerWorker", "slotPerWorker", 1), 0, "unknown       spec.slotPerWorker"},
		{"not an MPIJob", convertOptions{files: []string{"-"}}, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", 2, ""},
		{"a Launcher alone", convertOptions{files: []string{"-"}}, strings.Replace(piMPIJob, "replicas: 2", "replicas: 0", 1), 2, ""},
		{"unknown gang scheduler", convertOptions{files: []string{convertCases + "upstream/pi.yaml"}, gang: "kube-batch"}, "", 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := runConvert(context.Background(), tc.opts, strings.NewReader(tc.stdin), &stdout, &stderr)
			if got := exitOf(err); got != tc.wantExit {
				t.Fatalf("exit %d (%v), want %d; stderr:\n%s", got, err, tc.wantExit, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("standard error lacks %q:\n%s", tc.wantErr, stderr.String())
			}
			if tc.wantExit == 2 {
				return
			}
			cluster := check.NewCluster()
			if err := cluster.Read("stdout", &stdout); err != nil {
				t.Fatalf("standard output is not documents check reads: %v", err)
			}
			if len(cluster.TrainJobs) != 1 || len(cluster.Runtimes) != 1 {
				t.Errorf("standard output holds %d TrainJobs and %d TrainingRuntimes, want 1 and 1", len(cluster.TrainJobs), len(cluster.Runtimes))
			}
		})
	}
}

const piMPIJob = `apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: pi
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - image: mpioperator/mpi-pi:openmpi
            name: mpi-launcher
            command: [mpirun, -n, "2", /home/mpiuser/pi]
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - image: mpioperator/mpi-pi:openmpi
            name: mpi-worker
`
