package devcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

var (
	assetsOnce sync.Once
	assetsDir  string
	assetsErr  error
)

// BinaryAssets returns the folder with kube-apiserver and etcd. It honours
// KUBEBUILDER_ASSETS (the Makefile sets it) and otherwise runs
// test/controlplane/build.sh, which builds them from source once per machine.
func BinaryAssets() (string, error) {
	assetsOnce.Do(func() {
		if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
			assetsDir = dir
			return
		}
		assetsDir, assetsErr = runBuildScript("the control plane", "test/controlplane/build.sh")
	})
	return assetsDir, assetsErr
}

// runBuildScript runs the build script at path (from the repository root)
// with env added, and returns what it prints: where it put what it built.
// Its progress goes to stderr, so a cold build is not mistaken for a hang.
func runBuildScript(what, path string, env ...string) (string, error) {
	cmd := exec.Command("bash", filepath.Join(RepoRoot(), filepath.FromSlash(path)))
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s (%s): %w", what, path, err)
	}
	return strings.TrimSpace(out.String()), nil
}
