//go:build !checkonly

package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/mpiguard/mpiguard/internal/audit"
)

func TestWriteAudit(t *testing.T) {
	job := corev1.ObjectReference{Kind: "TrainJob", Namespace: "team-a", Name: "big"}
	ctr := corev1.ObjectReference{Kind: "ClusterTrainingRuntime", Name: "mpi"}
	results := []audit.Result{
		{Object: ctr, Policy: audit.RuntimeTemplatePolicy, Status: audit.Pass},
		{Object: job, Policy: "aggregate-quota", Status: audit.Fail, Message: "spec.trainer.numNodes: needs 8 cpu, 2 left\nlower it", Field: "spec.trainer.numNodes", PolicySetVersion: "v1"},
		{Object: job, Policy: "slots", Status: audit.Warn, Message: "slots per worker 3 is odd", PolicySetVersion: "v1"},
	}
	cases := []struct {
		name     string
		format   string
		showPass bool
		results  []audit.Result
		want     string
	}{
		{
			name: "table hides passes", format: "table", results: results,
			want: "NAMESPACE  OBJECT        POLICY           RESULT  MESSAGE\n" +
				"team-a     TrainJob/big  aggregate-quota  fail    spec.trainer.numNodes: needs 8 cpu, 2 left lower it\n" +
				"team-a     TrainJob/big  slots            warn    slots per worker 3 is odd\n" +
				"3 results: 1 fail, 1 warn, 0 error, 1 pass\n",
		},
		{
			name: "table with passes, cluster-scoped as -", format: "table", showPass: true, results: results[:1],
			want: "NAMESPACE  OBJECT                      POLICY            RESULT  MESSAGE\n" +
				"-          ClusterTrainingRuntime/mpi  runtime-template  pass    \n" +
				"1 results: 0 fail, 0 warn, 0 error, 1 pass\n",
		},
		{
			name: "json lists every result", format: "json", results: results[:2],
			want: `{
  "summary": {
    "pass": 1,
    "fail": 1,
    "warn": 0,
    "error": 0
  },
  "results": [
    {
      "kind": "ClusterTrainingRuntime",
      "name": "mpi",
      "policy": "runtime-template",
      "result": "pass"
    },
    {
      "namespace": "team-a",
      "kind": "TrainJob",
      "name": "big",
      "policy": "aggregate-quota",
      "result": "fail",
      "message": "spec.trainer.numNodes: needs 8 cpu, 2 left\nlower it",
      "field": "spec.trainer.numNodes",
      "policySetVersion": "v1"
    }
  ]
}
`,
		},
		{
			name: "yaml, nothing found", format: "yaml",
			want: "results: []\nsummary:\n  error: 0\n  fail: 0\n  pass: 0\n  warn: 0\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeAudit(&b, tc.format, tc.results, tc.showPass); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, b.String()); d != "" {
				t.Errorf("output (-want +got):\n%s", d)
			}
		})
	}
}

func TestAuditExitCode(t *testing.T) {
	r := func(s audit.Status) audit.Result { return audit.Result{Status: s} }
	cases := []struct {
		name    string
		results []audit.Result
		want    int
	}{
		{"nothing", nil, 0},
		{"pass and warn", []audit.Result{r(audit.Pass), r(audit.Warn)}, 0},
		{"a fail", []audit.Result{r(audit.Pass), r(audit.Fail)}, 1},
		{"an error wins", []audit.Result{r(audit.Fail), r(audit.Error)}, 2},
	}
	for _, tc := range cases {
		if got := auditExitCode(tc.results); got != tc.want {
			t.Errorf("%s: exit code %d, want %d", tc.name, got, tc.want)
		}
	}
}
