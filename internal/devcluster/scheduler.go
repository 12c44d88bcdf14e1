package devcluster

import "context"

// kubeScheduler is the binary's name, in the assets and as a shim.
const kubeScheduler = "kube-scheduler"

// startScheduler runs kube-scheduler, built from the same k8s.io/kubernetes
// as the kube-apiserver (test/controlplane/build.sh), with its default
// profile: it binds pods to the KWOK nodes (kwok.go).
func (e *Env) startScheduler(ctx context.Context) error {
	_, err := e.startKubeComponent(ctx, kubeScheduler, kubeScheduler, "system:kube-scheduler")
	return err
}
