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
	_, err := e.startKubeComponent(ctx, controllerManager, controllerManager, "system:kube-controller-manager", "--controllers="+strings.Join(controllers, ","))
	return err
}

// StartQuotaController runs one more kube-controller-manager with only the
// resourcequota controller: ResourceQuotas' status is then the real
// controller's, computed from the pods that exist and lowered when they
// finish or go. stop ends it (Env.Stop does too); it is returned also with
// an error once the process started.
//
// Its full resync runs every 10 s instead of every 5 min: the controller
// computes a quota's usage from its informer's pods, and a sync that runs
// just as pods are created (a new quota is queued twice: for its status and
// for its missing usage) writes a used that leaves out the pods its informer
// has not seen yet, undoing what the apiserver's quota admission charged for
// them; pod creations queue no sync, so only the resync counts them again
// (with the default period, a quota's status.used can count one pod of two
// for minutes).
func (e *Env) StartQuotaController(ctx context.Context) (stop func() error, err error) {
	e.quotaControllers++
	instance := fmt.Sprintf("%s-resourcequota-%d", controllerManager, e.quotaControllers)
	p, err := e.startKubeComponent(ctx, controllerManager, instance, "system:kube-controller-manager", "--controllers=resourcequota", "--resource-quota-sync-period=10s")
	if p == nil {
		return nil, err
	}
	return func() error { return e.stopComponent(p) }, err
}

// startKubeComponent runs a component of k8s.io/kubernetes from the control
// plane's assets (kube-controller-manager, kube-scheduler) as a
// system:masters user named user, without leader election, serving /healthz
// on a free loopback port only to say when it is up, with args besides. It
// dies with this process, as the apiserver does.
func (e *Env) startKubeComponent(ctx context.Context, name, instance, user string, args ...string) (*component, error) {
	kubeconfig, err := e.componentKubeconfig(instance, user)
	if err != nil {
		return nil, err
	}
	port, err := e.componentPort()
	if err != nil {
		return nil, fmt.Errorf("finding a port for %s: %w", name, err)
	}
	common := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(e.runDir, instance+"-certs"),
		"--v=2",
	}
	p, err := e.startComponent(ctx, name, instance, e.Testenv.BinaryAssetsDirectory, loopbackURL("https", port), append(common, args...)...)
	if err != nil {
		return p, fmt.Errorf("%w (build it with `make controlplane`, test/controlplane/build.sh)", err)
	}
	return p, nil
}
