package devcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// newLogDir makes the folder for the control plane's logs: $MPIGUARD_TEST_LOGS or
// test/logs under the repository (git-ignored).
func newLogDir(name string) (string, error) {
	if name == "" {
		name = "suite"
	}
	base := os.Getenv("MPIGUARD_TEST_LOGS")
	if base == "" {
		base = filepath.Join(RepoRoot(), "test", "logs")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(base, fmt.Sprintf("%s-%s-", name, time.Now().Format("20060102-150405")))
}

// wireLogs sends the apiserver's and etcd's output to files: envtest discards it
// otherwise, and a failing test is hard to read without the apiserver's side.
func (e *Env) wireLogs() error {
	open := func(name string) (*os.File, error) {
		f, err := os.Create(filepath.Join(e.LogDir, name))
		if err == nil {
			e.logs = append(e.logs, f)
		}
		return f, err
	}
	api := e.Testenv.ControlPlane.GetAPIServer()
	apiLog, err := open("kube-apiserver.log")
	if err != nil {
		return err
	}
	api.Out, api.Err = apiLog, apiLog
	if e.Testenv.ControlPlane.Etcd == nil {
		e.Testenv.ControlPlane.Etcd = &envtest.Etcd{}
	}
	etcdLog, err := open("etcd.log")
	if err != nil {
		return err
	}
	e.Testenv.ControlPlane.Etcd.Out, e.Testenv.ControlPlane.Etcd.Err = etcdLog, etcdLog
	return nil
}

func (e *Env) closeLogs() {
	for _, f := range e.logs {
		_ = f.Close()
	}
	e.logs = nil
}
