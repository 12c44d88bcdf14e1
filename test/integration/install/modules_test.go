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

// The ServiceMonitor and PrometheusRule CRDs config/openshift's monitor and the
// Helm chart's monitoring objects are checked against, as the
// Prometheus Operator releases them: its module at a pinned version (not a
// requirement of go.mod, which imports nothing of it), from the module proxy
// like every other upstream manifest the tests load.
const (
	prometheusOperatorModule  = "github.com/prometheus-operator/prometheus-operator"
	prometheusOperatorVersion = "v0.85.0"
	serviceMonitorCRDFile     = "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"
	prometheusRuleCRDFile     = "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml"
)

// prometheusOperatorCRDs downloads the pinned module (once; the module cache
// keeps it) and returns the paths of its ServiceMonitor and PrometheusRule
// CRDs (config/prometheus and the Helm chart install both).
func prometheusOperatorCRDs(ctx context.Context) ([]string, error) {
	mod := prometheusOperatorModule + "@" + prometheusOperatorVersion
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod)
	// Outside this module, so its go.mod and go.sum stay as they are.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Error != "" || err != nil {
		return nil, fmt.Errorf("go mod download %s: %v %s %s", mod, err, info.Error, stderrOf(err))
	}
	var paths []string
	for _, f := range []string{serviceMonitorCRDFile, prometheusRuleCRDFile} {
		path := filepath.Join(info.Dir, f)
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%s has no %s: %w", mod, f, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}
