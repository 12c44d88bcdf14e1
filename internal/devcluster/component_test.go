//go:build linux

package devcluster

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestComponentShimRunsTheBinaryOfItsFolder: a component's shim becomes the
// binary of its name in the folder it was made for, which for KWOK is not
// the control plane's (parentdeath_test checks that a shim dies with its
// parent).
func TestComponentShimRunsTheBinaryOfItsFolder(t *testing.T) {
	controlPlane := fakeControlPlane(t, map[string]string{"kube-apiserver": "true"})
	kwokDir := fakeControlPlane(t, map[string]string{kwok: "echo"})
	runDir, err := newRunDir(controlPlane)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(runDir) })
	shim, err := componentShim(runDir, kwokDir, kwok, kwok)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(shim, "--config=a.yaml,b.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "--config=a.yaml,b.yaml"; got != want {
		t.Errorf("the kwok shim printed %q, want %q (what the fake kwok echoes)", got, want)
	}
}
