package devcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// ModuleDir returns the module-cache folder of a module at the version go.mod pins,
// so tests load upstream manifests (Trainer CRDs and runtimes, JobSet CRDs,
// cert-manager CRDs) exactly as released instead of copies kept in this repo.
func ModuleDir(module string) (string, error) {
	moduleDirsMu.Lock()
	defer moduleDirsMu.Unlock()
	if dir, ok := moduleDirs[module]; ok {
		return dir, nil
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		return "", fmt.Errorf("locating module %s (go list -m): %w: %s", module, err, stderr)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("module %s is not downloaded; run 'go mod download %s'", module, module)
	}
	moduleDirs[module] = dir
	return dir, nil
}

var (
	moduleDirsMu sync.Mutex
	moduleDirs   = map[string]string{}
)

// RepoRoot is the folder that holds go.mod, found from this source file
// (internal/devcluster).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Upstream manifest folders inside the pinned modules.
const (
	TrainerModule     = "github.com/kubeflow/trainer/v2"
	JobSetModule      = "sigs.k8s.io/jobset"
	CertManagerModule = "github.com/cert-manager/cert-manager"
)

// TrainerCRDs is the pinned Trainer module's CRD folder.
func TrainerCRDs() (string, error) { return moduleSubdir(TrainerModule, "manifests/base/crds") }

// JobSetCRDs is the pinned JobSet module's CRD folder.
func JobSetCRDs() (string, error) { return moduleSubdir(JobSetModule, "config/components/crd/bases") }

// TrainerRuntimes is the pinned Trainer module's folder of upstream runtimes.
func TrainerRuntimes() (string, error) {
	return moduleSubdir(TrainerModule, "manifests/base/runtimes")
}

// CertManagerCRDs is the pinned cert-manager module's CRD folder.
func CertManagerCRDs() (string, error) { return moduleSubdir(CertManagerModule, "deploy/crds") }

// OpenReportsModule provides the openreports.io Report and ClusterReport CRDs
// audit publishes in (config/crd/openreports is copied from the same folder).
const OpenReportsModule = "github.com/openreports/reports-api"

// OpenReportsCRDs is the openreports.io CRD folder of the pinned module.
func OpenReportsCRDs() (string, error) { return moduleSubdir(OpenReportsModule, "config/crd") }

func moduleSubdir(module, sub string) (string, error) {
	dir, err := ModuleDir(module)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, sub)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s has no %s: %w", module, sub, err)
	}
	return p, nil
}
