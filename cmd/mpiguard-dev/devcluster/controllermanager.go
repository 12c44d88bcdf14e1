package devcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// controllerManager is the binary's name, in the assets and as a shim.
const controllerManager = "kube-controller-manager"

// startControllerManager runs kube-controller-manager, built from the same
// k8s.io/kubernetes as the kube-apiserver (test/controlplane/build.sh), with
// only the named controllers: envtest runs none, so without it a Job never
// creates a pod, and nothing records why it could not (FailedCreate).
func (e *Env) startControllerManager(ctx context.Context, controllers []string) error {
	return e.startKubeComponent(ctx, controllerManager, "system:kube-controller-manager", "--controllers="+strings.Join(controllers, ","))
}

// startKubeComponent runs a component of k8s.io/kubernetes from the control
// plane's assets (kube-controller-manager, kube-scheduler) as a
// system:masters user named user, without leader election, serving /healthz
// on a free loopback port only to say when it is up, with args besides. It
// dies with this process, as the apiserver does.
func (e *Env) startKubeComponent(ctx context.Context, name, user string, args ...string) error {
	kubeconfig, err := e.componentKubeconfig(name, user)
	if err != nil {
		return err
	}
	port, err := e.componentPort()
	if err != nil {
		return fmt.Errorf("finding a port for %s: %w", name, err)
	}
	common := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(e.runDir, name+"-certs"),
		"--v=2",
	}
	if err := e.startComponent(ctx, name, e.Testenv.BinaryAssetsDirectory, loopbackURL("https", port), append(common, args...)...); err != nil {
		return fmt.Errorf("%w (build it with `make controlplane`, test/controlplane/build.sh)", err)
	}
	return nil
}
