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
		cmd := exec.Command("bash", filepath.Join(RepoRoot(), "test", "controlplane", "build.sh"))
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = os.Stderr // build progress, so a cold build is not mistaken for a hang
		if err := cmd.Run(); err != nil {
			assetsErr = fmt.Errorf("building the control plane (test/controlplane/build.sh): %w", err)
			return
		}
		assetsDir = strings.TrimSpace(out.String())
	})
	return assetsDir, assetsErr
}
