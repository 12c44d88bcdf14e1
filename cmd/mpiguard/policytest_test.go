//go:build !checkonly

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpiguard/mpiguard/policies"
)

func TestPolicyTest(t *testing.T) {
	var out bytes.Buffer
	if err := runPolicyTest(context.Background(), "", false, &out); err != nil {
		t.Fatalf("embedded policies: %v\n%s", err, out.String())
	}
	if !strings.HasSuffix(out.String(), " failed\n") || !strings.Contains(out.String(), ", 0 failed") {
		t.Errorf("summary = %q", out.String())
	}

	// A policy whose deny rule matches nothing fails.
	dir := t.TempDir()
	if err := os.CopyFS(dir, policies.FS); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "slots-gpus/slots_gpus.rego")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.ReplaceAll(string(src), "input.job.slotsPerWorker != input.job.gpusPerWorker", "input.job.slotsPerWorker < 0")
	if broken == string(src) {
		t.Fatal("the slots-gpus rule to break is not in the policy any more; update this test")
	}
	if err := os.WriteFile(file, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = runPolicyTest(context.Background(), dir, false, &out)
	if exitOf(err) != 1 {
		t.Fatalf("exit = %d (%v), want 1\n%s", exitOf(err), err, out.String())
	}
	for _, want := range []string{
		"FAIL rego data.mpiguard.policies.slots_gpus_test.test_slots_differ_from_gpus_denied (slots-gpus/slots_gpus_test.rego:32): the test rule is false",
		"FAIL sample " + filepath.Join(dir, "slots-gpus/samples/denied-slots-exceed-gpus.yaml"),
		"no TrainJob is denied by policy slots-gpus",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not contain %q:\n%s", want, out.String())
		}
	}
}

// The example of docs/policies.md "Writing a policy" passes its own tests
// (TestPoliciesAddAPolicy checks it with check).
func TestPolicyTestOfTheExample(t *testing.T) {
	var out bytes.Buffer
	if err := runPolicyTest(context.Background(), examplePolicies, false, &out); err != nil {
		t.Fatalf("policy test %s: %v\n%s", examplePolicies, err, out.String())
	}
	if got, want := out.String(), "2 Rego tests, 2 samples, 0 failed\n"; got != want {
		t.Errorf("policy test %s printed %q, want %q", examplePolicies, got, want)
	}
}
