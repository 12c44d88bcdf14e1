//go:build !linux

package devcluster

import "path/filepath"

// controlPlaneShims gives envtest the real binaries: there is no parent-death
// signal here, so a control plane outlives a run that is killed.
func controlPlaneShims(runDir string) (apiServer, etcd string, err error) {
	spec, err := readRunSpec(runDir)
	if err != nil {
		return "", "", err
	}
	return filepath.Join(spec.Assets, "kube-apiserver"), filepath.Join(spec.Assets, "etcd"), nil
}

// componentShim gives the real binary, for the same reason.
func componentShim(_, assets, name, _ string) (string, error) {
	return filepath.Join(assets, name), nil
}
