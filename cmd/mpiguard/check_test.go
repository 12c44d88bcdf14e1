package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/internal/check"
)

const samples = "../../policies/"

func exitOf(err error) int {
	if err == nil {
		return 0
	}
	var ec *exitError
	if errors.As(err, &ec) {
		return ec.code
	}
	return -1
}

func TestCheckExitCodesAndOutput(t *testing.T) {
	deniedYAML, err := os.ReadFile(samples + "aggregate-quota/samples/denied-gpus-over-quota.yaml")
	if err != nil {
		t.Fatal(err)
	}
	allowedYAML, err := os.ReadFile(samples + "max-duration/samples/allowed-default-deadline-set.yaml")
	if err != nil {
		t.Fatal(err)
	}
	strictYAML := strings.Replace(string(allowedYAML), "  name: team-a\n",
		"  name: team-a\n  annotations:\n    mpiguard.io/network-policy: job-isolated\n    mpiguard.io/network-policy-extra-egress: 52.216.0.0/15:443\n", 1)
	cases := []struct {
		name     string
		opts     checkOptions
		stdin    string
		wantExit int
		wantOut  string // substring of stdout
		wantErr  string // substring of the error
	}{
		{name: "allowed", opts: checkOptions{files: []string{samples + "max-duration/samples/allowed-default-deadline-set.yaml"}, output: "text"},
			wantOut: "TrainJob team-a/resnet: ALLOWED\n"},
		{name: "denied", opts: checkOptions{files: []string{samples + "aggregate-quota/samples/denied-gpus-over-quota.yaml"}, output: "text"},
			wantExit: 1, wantOut: `TrainJob needs 12 nvidia.com/gpu (launcher 0 + 3 workers x 4) but ResourceQuota "team-a" has 4 of 16 free`},
		{name: "stdin", opts: checkOptions{files: []string{"-"}, output: "text"}, stdin: string(deniedYAML),
			wantExit: 1, wantOut: "TrainJob team-a/resnet: DENIED"},
		// A stored Kueue job (kubectl get -o yaml) is suspended: judged as
		// its resume, with the quota policies, not as a create of a
		// suspended job (which the quota policies let through).
		{name: "suspended: judged as its resume", opts: checkOptions{files: []string{"-"}, output: "text"},
			stdin:    strings.Replace(string(deniedYAML), "spec:\n  runtimeRef:", "spec:\n  suspend: true\n  runtimeRef:", 1),
			wantExit: 1, wantOut: "TrainJob team-a/resnet: DENIED (judged as its resume: the job is suspended"},
		{name: "patches shown", opts: checkOptions{files: []string{samples + "max-duration/samples/allowed-default-deadline-set.yaml"}, output: "text", showPatches: true},
			wantOut: "patch  max-duration: spec.activeDeadlineSeconds = 86400"},
		{name: "network policy shown", opts: checkOptions{files: []string{samples + "max-duration/samples/allowed-default-deadline-set.yaml"}, output: "text", showNetworkPolicy: true},
			wantOut: "TrainJob team-a/resnet: ALLOWED\n" +
				`  net    network policy "ingress-isolated" (controller default): no pod outside the job can connect to its Launcher and Workers; its pods may connect anywhere the namespace's other policies allow` + "\n"},
		{name: "network policy the namespace chooses", opts: checkOptions{files: []string{"-"}, output: "text", showNetworkPolicy: true}, stdin: strictYAML,
			wantOut: `  net    network policy "job-isolated" (Namespace "team-a"): no pod outside the job can connect to its Launcher and Workers; ` +
				`its pods cannot connect outside the job except to cluster DNS (kube-system port 53) and 52.216.0.0/15:443: ` +
				`object storage, registries and the Kubernetes API need mpiguard.io/network-policy-extra-egress` + "\n"},
		{name: "unreadable file", opts: checkOptions{files: []string{"does-not-exist.yaml"}, output: "text"},
			wantExit: 2, wantErr: "does-not-exist.yaml"},
		{name: "invalid document", opts: checkOptions{files: []string{"-"}, output: "text"}, stdin: "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: x}\nspec: {nonsense: 1}\n",
			wantExit: 2, wantErr: `<stdin> (document 1): invalid TrainJob: strict decoding error: unknown field "spec.nonsense"`},
		{name: "missing runtime", opts: checkOptions{files: []string{"-"}, output: "text"}, stdin: "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: x, namespace: a}\nspec: {runtimeRef: {name: nowhere}}\n",
			wantExit: 2, wantOut: `TrainJob a/x: ERROR: ClusterTrainingRuntime "nowhere" (spec.runtimeRef) is not among the documents read`},
		{name: "no TrainJob", opts: checkOptions{files: []string{"-"}, output: "text"}, stdin: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
			wantExit: 2, wantErr: "no TrainJob found"},
		{name: "bad output format", opts: checkOptions{files: []string{"-"}, output: "xml"}, wantExit: 2, wantErr: "want text or json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, stderr bytes.Buffer
			err := runCheck(context.Background(), tc.opts, strings.NewReader(tc.stdin), &out, &stderr)
			if got := exitOf(err); got != tc.wantExit {
				t.Errorf("exit = %d (%v), want %d\n%s", got, err, tc.wantExit, out.String())
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("output %q does not contain %q", out.String(), tc.wantOut)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v does not contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheckJSON(t *testing.T) {
	var out bytes.Buffer
	err := runCheck(context.Background(), checkOptions{files: []string{samples + "slots-gpus/samples/allowed-cpu-only-oversubscribed-warns.yaml"}, output: "json"}, nil, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		TrainJob   string `json:"trainJob"`
		Allowed    bool   `json:"allowed"`
		Violations []struct {
			Policy, Action, Field string
		} `json:"violations"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := []struct {
		TrainJob   string `json:"trainJob"`
		Allowed    bool   `json:"allowed"`
		Violations []struct {
			Policy, Action, Field string
		} `json:"violations"`
	}{{TrainJob: "team-a/sim", Allowed: true, Violations: []struct{ Policy, Action, Field string }{{"slots-gpus", "warn", "spec.trainer.numProcPerNode"}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON output (-want +got):\n%s", diff)
	}
}

func TestCheckWithOtherParameters(t *testing.T) {
	params := t.TempDir() + "/params.yaml"
	if err := os.WriteFile(params, []byte("policies:\n  aggregate-quota: {enforcement: warn}\n  slots-gpus: {}\n  max-duration: {}\n  data-residency: {}\n  istio-opt-out: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := runCheck(context.Background(), checkOptions{files: []string{samples + "aggregate-quota/samples/denied-gpus-over-quota.yaml"}, parameters: params, output: "text"}, nil, &out, io.Discard)
	if err != nil {
		t.Fatalf("with aggregate-quota warning only: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "warn   aggregate-quota") {
		t.Errorf("output does not show the quota violation as a warning:\n%s", out.String())
	}
}

// kubectl get -o yaml of several objects is a List; kinds no decision depends
// on are reported, not silently dropped.
func TestCheckReadsListsAndNotesIgnoredKinds(t *testing.T) {
	sample, err := os.ReadFile(samples + "max-duration/samples/allowed-default-deadline-set.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cluster := check.NewCluster()
	if err := cluster.Read("sample", strings.NewReader(string(sample))); err != nil {
		t.Fatal(err)
	}
	job, err := json.Marshal(cluster.TrainJobs[0].TrainJob)
	if err != nil {
		t.Fatal(err)
	}
	withoutJob := strings.Split(string(sample), "kind: TrainJob")[0]
	withoutJob = withoutJob[:strings.LastIndex(withoutJob, "---")]
	list := withoutJob + "---\napiVersion: v1\nkind: List\nitems:\n  - " + string(job) + "\n  - {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}}\n"
	var out, stderr bytes.Buffer
	if err := runCheck(context.Background(), checkOptions{files: []string{"-"}, output: "text"}, strings.NewReader(list), &out, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if diff := cmp.Diff("TrainJob team-a/resnet: ALLOWED\n", out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if want := "note: ignored <stdin> (document 3) item 1: apps/v1 Deployment"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q does not contain %q", stderr.String(), want)
	}
}

// A TrainJob Kueue's MultiKueue runs on a worker cluster (spec.managedBy)
// creates no pod here: this namespace's quota does not judge it, every other
// policy does. The same job without spec.managedBy is judged by the quota.
func TestCheckMultiKueueJobIsJudgedWithoutLocalQuota(t *testing.T) {
	allowed, err := os.ReadFile(samples + "aggregate-quota/samples/allowed-multikueue-over-local-quota.yaml")
	if err != nil {
		t.Fatal(err)
	}
	managedBy := "  managedBy: " + kueue.MultiKueueControllerName + "\n"
	if !strings.Contains(string(allowed), managedBy) {
		t.Fatalf("the sample has no %q", managedBy)
	}
	for _, tc := range []struct {
		name, file, stdin string
		wantExit          int
		wantOut           string
	}{
		{name: "over the local quota", file: samples + "aggregate-quota/samples/allowed-multikueue-over-local-quota.yaml",
			wantOut: "TrainJob team-a/resnet: ALLOWED\nTrainJob team-a/bert: ALLOWED\n"},
		{name: "outside the data residency zone", file: samples + "data-residency/samples/denied-multikueue-outside-zone.yaml",
			wantExit: 1, wantOut: "TrainJob team-eu/resnet: DENIED\n  deny   data-residency: spec.runtimeRef: the Worker pods may run outside data residency zone \"eu\""},
		{name: "over the duration ceiling", file: samples + "max-duration/samples/denied-multikueue-over-ceiling.yaml",
			wantExit: 1, wantOut: "TrainJob team-a/resnet: DENIED\n  deny   max-duration: spec.activeDeadlineSeconds: TrainJob may run for 200 hours"},
		{name: "without managedBy, over the quota", file: "-", stdin: strings.Replace(string(allowed), managedBy, "", 1),
			wantExit: 1, wantOut: "TrainJob team-a/resnet: DENIED\n  deny   aggregate-quota: spec.trainer: TrainJob needs 8 nvidia.com/gpu (launcher 0 + 2 workers x 4) but ResourceQuota \"team-a\" has 4 of 4 free"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runCheck(context.Background(), checkOptions{files: []string{tc.file}, output: "text"}, strings.NewReader(tc.stdin), &out, io.Discard)
			if got := exitOf(err); got != tc.wantExit {
				t.Errorf("exit = %d (%v), want %d\n%s", got, err, tc.wantExit, out.String())
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("output does not contain %q:\n%s", tc.wantOut, out.String())
			}
			if tc.wantExit == 1 && strings.Count(out.String(), "  deny ") != 1 {
				t.Errorf("want exactly one denial:\n%s", out.String())
			}
		})
	}
}
