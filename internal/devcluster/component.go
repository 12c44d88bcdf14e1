package devcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// component is a process of the local cluster that the framework starts
// itself (envtest starts only kube-apiserver and etcd):
// kube-controller-manager, kube-scheduler, KWOK.
type component struct {
	name string
	cmd  *exec.Cmd
	// exited is closed when it exits; err is then why.
	exited chan struct{}
	err    error
	// release gives back the thread that started it (parentdeath.go).
	release func()
	log     string
}

// componentKubeconfig provisions a system:masters user named user for a
// component and writes its kubeconfig into the run folder.
func (e *Env) componentKubeconfig(name, user string) (string, error) {
	u, err := e.Testenv.ControlPlane.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("provisioning %s's user: %w", name, err)
	}
	kubeconfig, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.runDir, name+".kubeconfig")
	return path, os.WriteFile(path, kubeconfig, 0o600)
}

// componentPort is a free loopback port for a component's health endpoint:
// not the webhook port envtest chose, which replica 0 (or the proxy) binds
// only after the components start.
func (e *Env) componentPort() (int, error) {
	ports, err := freeLoopbackPorts("127.0.0.1", 1, e.Testenv.WebhookInstallOptions.LocalServingPort)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// startComponent runs the binary name from the folder assets with args,
// through a shim (parentdeath.go), so that it dies with this process as the
// apiserver does, in a process group of its own (a Ctrl-C meant for this
// process reaches it only through Stop), its output in LogDir/<instance>.log
// (instance names one run of the binary: name, unless it runs more than
// once). It returns once healthURL answers 200 (https is not verified: a
// loopback liveness probe of a self-signed server); the component it
// returns, also with an error once started, is stopped by Env.Stop.
func (e *Env) startComponent(ctx context.Context, name, instance, assets, healthURL string, args ...string) (*component, error) {
	if _, err := os.Stat(filepath.Join(assets, name)); err != nil {
		return nil, fmt.Errorf("%s is not in %s: %w", name, assets, err)
	}
	shim, err := componentShim(e.runDir, assets, name, instance)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(e.LogDir, instance+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	e.logs = append(e.logs, logFile)
	cmd := exec.Command(shim, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &component{name: name, cmd: cmd, exited: make(chan struct{}), log: logPath}
	if p.release, err = startOnOwnThread(cmd.Start); err != nil {
		p.release()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	e.procs = append(e.procs, p)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback liveness probe
	if err := waitOK(ctx, c, healthURL, time.Minute, p.exited, func() error { return p.err }); err != nil {
		return p, fmt.Errorf("%s (log: %s): %w", name, logPath, err)
	}
	return p, nil
}

// stopComponent stops p before Env.Stop would, and forgets it.
func (e *Env) stopComponent(p *component) error {
	e.procs = slices.DeleteFunc(e.procs, func(q *component) bool { return q == p })
	return p.stop()
}

// loopbackURL is scheme://127.0.0.1:port/healthz.
func loopbackURL(scheme string, port int) string {
	return scheme + "://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/healthz"
}

// stop ends it (SIGTERM, then SIGKILL after 10s) and says if it had died before.
func (p *component) stop() error {
	defer p.release()
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited during the run (log: %s): %v", p.name, p.log, p.err)
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

// stopComponents stops them, the last started first.
func (e *Env) stopComponents() []error {
	var errs []error
	for i := len(e.procs) - 1; i >= 0; i-- {
		if err := e.procs[i].stop(); err != nil {
			errs = append(errs, err)
		}
	}
	e.procs = nil
	return errs
}
