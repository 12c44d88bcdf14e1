package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controllerManager is the binary's name, in the assets and as a shim.
const controllerManager = "kube-controller-manager"

// controllerManagerProc is a running kube-controller-manager.
type controllerManagerProc struct {
	cmd *exec.Cmd
	// exited is closed when it exits; err is then why.
	exited chan struct{}
	err    error
	// release gives back the thread that started it (parentdeath.go).
	release func()
	log     string
}

// startControllerManager runs kube-controller-manager, built from the same
// k8s.io/kubernetes as the kube-apiserver (test/controlplane/build.sh), with
// only the named controllers: envtest runs none, so without it a Job never
// creates a pod, and nothing records why it could not (FailedCreate). It runs
// as a system:masters user of its own, without leader election, serving
// /healthz on a free loopback port only to say when it is up. It dies with
// this process, as the apiserver does.
func (e *Env) startControllerManager(ctx context.Context, controllers []string) error {
	p, err := e.launchControllerManager(ctx, controllerManager, controllers)
	e.controllerManager = p
	return err
}

// launchControllerManager starts one kube-controller-manager running
// controllers; name keeps its files (kubeconfig, log, certificates) apart
// from another's. The process it returns, if any, must be stopped even when
// it returns an error (it did not get healthy).
func (e *Env) launchControllerManager(ctx context.Context, name string, controllers []string) (*controllerManagerProc, error) {
	assets := e.Testenv.BinaryAssetsDirectory
	if _, err := os.Stat(filepath.Join(assets, controllerManager)); err != nil {
		return nil, fmt.Errorf("%s is not in %s: build it with `make controlplane` (test/controlplane/build.sh): %w", controllerManager, assets, err)
	}
	user, err := e.Testenv.ControlPlane.AddUser(envtest.User{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("provisioning kube-controller-manager's user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	kubeconfigPath := filepath.Join(e.runDir, name+".kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	// Not the webhook port envtest chose: replica 0 (or the proxy) binds it
	// only after this starts.
	ports, err := freeLoopbackPorts("127.0.0.1", 1, e.Testenv.WebhookInstallOptions.LocalServingPort)
	if err != nil {
		return nil, fmt.Errorf("finding a port for kube-controller-manager: %w", err)
	}
	shim, err := controllerManagerShim(e.runDir)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(e.LogDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	e.logs = append(e.logs, logFile)
	cmd := exec.Command(shim,
		"--kubeconfig="+kubeconfigPath,
		"--authentication-kubeconfig="+kubeconfigPath,
		"--authorization-kubeconfig="+kubeconfigPath,
		"--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[0]),
		"--cert-dir="+filepath.Join(e.runDir, name+"-certs"),
		"--v=2",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, so that a Ctrl-C meant for the test binary
	// reaches it only through Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &controllerManagerProc{cmd: cmd, exited: make(chan struct{}), log: logPath}
	if p.release, err = startOnOwnThread(cmd.Start); err != nil {
		p.release()
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitHealthy(ctx, ports[0]); err != nil {
		return p, fmt.Errorf("kube-controller-manager (log: %s): %w", logPath, err)
	}
	return p, nil
}

// waitHealthy polls /healthz until it answers 200, it exits, or a minute passes.
func (p *controllerManagerProc) waitHealthy(ctx context.Context, port int) error {
	// Its serving certificate is self-signed, and only liveness is asked.
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback liveness probe
	url := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/healthz"
	return waitOK(ctx, c, url, time.Minute, p.exited, func() error { return p.err })
}

// stop ends it (SIGTERM, then SIGKILL after 10s) and says if it had died before.
func (p *controllerManagerProc) stop() error {
	defer p.release()
	select {
	case <-p.exited:
		return fmt.Errorf("kube-controller-manager exited during the run (log: %s): %v", p.log, p.err)
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	return nil
}
