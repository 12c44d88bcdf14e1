package install

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// The ServiceMonitor CRD config/openshift's monitor is checked against, as the
// Prometheus Operator releases it: its module at a pinned version (not a
// requirement of go.mod, which imports nothing of it), from the module proxy
// like every other upstream manifest the tests load.
const (
	prometheusOperatorModule  = "github.com/prometheus-operator/prometheus-operator"
	prometheusOperatorVersion = "v0.85.0"
	serviceMonitorCRDFile     = "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"
)

// serviceMonitorCRD downloads the pinned module (once; the module cache keeps
// it) and returns the path of its ServiceMonitor CRD.
func serviceMonitorCRD(ctx context.Context) (string, error) {
	mod := prometheusOperatorModule + "@" + prometheusOperatorVersion
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod)
	// Outside this module, so its go.mod and go.sum stay as they are.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Error != "" || err != nil {
		return "", fmt.Errorf("go mod download %s: %v %s %s", mod, err, info.Error, stderrOf(err))
	}
	path := filepath.Join(info.Dir, serviceMonitorCRDFile)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s has no %s: %w", mod, serviceMonitorCRDFile, err)
	}
	return path, nil
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}
