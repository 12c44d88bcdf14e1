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
// creates a pod, and nothing records why it could not (FailedCreate). It runs
// as a system:masters user of its own, without leader election, serving
// /healthz on a free loopback port only to say when it is up. It dies with
// this process, as the apiserver does.
func (e *Env) startControllerManager(ctx context.Context, controllers []string) error {
	kubeconfig, err := e.componentKubeconfig(controllerManager, "system:kube-controller-manager")
	if err != nil {
		return err
	}
	port, err := e.componentPort()
	if err != nil {
		return fmt.Errorf("finding a port for kube-controller-manager: %w", err)
	}
	if err := e.startComponent(ctx, controllerManager, e.Testenv.BinaryAssetsDirectory, loopbackURL("https", port),
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(e.runDir, controllerManager+"-certs"),
		"--v=2",
	); err != nil {
		return fmt.Errorf("%w (build it with `make controlplane`, test/controlplane/build.sh)", err)
	}
	return nil
}
