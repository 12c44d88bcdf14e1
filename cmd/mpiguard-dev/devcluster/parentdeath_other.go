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

// controllerManagerShim gives the real kube-controller-manager, for the same reason.
func controllerManagerShim(runDir string) (string, error) {
	spec, err := readRunSpec(runDir)
	if err != nil {
		return "", err
	}
	return filepath.Join(spec.Assets, controllerManager), nil
}
