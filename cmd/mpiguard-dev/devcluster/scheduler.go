package devcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
)

// kubeScheduler is the binary's name, in the assets and as a shim.
const kubeScheduler = "kube-scheduler"

// startScheduler runs kube-scheduler, built from the same k8s.io/kubernetes
// as the kube-apiserver (test/controlplane/build.sh), with its default
// profile: it binds pods to the KWOK nodes (kwok.go). It runs as a
// system:masters user of its own, without leader election, and dies with
// this process.
func (e *Env) startScheduler(ctx context.Context) error {
	kubeconfig, err := e.componentKubeconfig(kubeScheduler, "system:kube-scheduler")
	if err != nil {
		return err
	}
	port, err := e.componentPort()
	if err != nil {
		return fmt.Errorf("finding a port for kube-scheduler: %w", err)
	}
	if err := e.startComponent(ctx, kubeScheduler, e.Testenv.BinaryAssetsDirectory, loopbackURL("https", port),
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(e.runDir, kubeScheduler+"-certs"),
		"--v=2",
	); err != nil {
		return fmt.Errorf("%w (build it with `make controlplane`, test/controlplane/build.sh)", err)
	}
	return nil
}
