package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// check -f policies/<policy>/samples/ --each-file judges every sample as the
// cluster it is: its output is, file by file, the sample's .want.
func TestCheckEachFileJudgesEverySampleAlone(t *testing.T) {
	dirs, err := filepath.Glob(samples + "*/samples")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no sample folders under %s (%v)", samples, err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(filepath.Dir(dir)), func(t *testing.T) {
			files, err := filepath.Glob(dir + "/*.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var want strings.Builder
			for _, f := range files {
				golden, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".want")
				if err != nil {
					t.Fatal(err)
				}
				want.WriteString("== " + f + "\n")
				want.Write(golden)
			}
			var out, stderr bytes.Buffer
			o := checkOptions{files: []string{dir + "/"}, eachFile: true, showPatches: true, output: "text"}
			err = runCheck(context.Background(), o, nil, &out, &stderr)
			if code := exitOf(err); code == 2 {
				t.Fatalf("exit 2: %v\n%s", err, stderr.String())
			}
			if diff := cmp.Diff(want.String(), out.String()); diff != "" {
				t.Errorf("check -f %s/ --each-file (-want +got):\n%s", dir, diff)
			}
		})
	}
}

// Without --each-file the samples are one cluster, which has one Namespace
// "team-a": the error says so and names the flag.
func TestCheckSamplesAsOneClusterNamesEachFile(t *testing.T) {
	var out, stderr bytes.Buffer
	o := checkOptions{files: []string{samples + "max-duration/samples/"}, output: "text"}
	err := runCheck(context.Background(), o, nil, &out, &stderr)
	if exitOf(err) != 2 || !strings.Contains(err.Error(), "duplicate") || !strings.Contains(err.Error(), "add --each-file") {
		t.Errorf("exit %d, error %v: want 2, a duplicate that names --each-file", exitOf(err), err)
	}
}

// A TrainJob naming a curated runtime checks without the runtime among the
// documents, with a note that the embedded one was used.
func TestCheckCuratedRuntimeByName(t *testing.T) {
	const job = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: mnist, namespace: team-a}\n" +
		"spec: {runtimeRef: {name: mpiguard-openmpi}, trainer: {numNodes: 4, numProcPerNode: 2, resourcesPerNode: {limits: {nvidia.com/gpu: 2}}}}\n"
	var out, stderr bytes.Buffer
	err := runCheck(context.Background(), checkOptions{files: []string{"-"}, output: "text"}, strings.NewReader(job), &out, &stderr)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", exitOf(err), err, out.String())
	}
	if got, want := out.String(), "TrainJob team-a/mnist: ALLOWED\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	if want := `note: ClusterTrainingRuntime "mpiguard-openmpi" is not among the documents read: the curated one`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q does not contain %q", stderr.String(), want)
	}
}
