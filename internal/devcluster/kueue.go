package devcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// KueueModule is Kueue: its API types (go.mod pins the version), its CRDs,
// and the manager the kueue suite runs, all of that one version.
const KueueModule = "sigs.k8s.io/kueue"

// KueueTrainJobFramework is the name of Kueue's TrainJob integration.
const KueueTrainJobFramework = "trainer.kubeflow.org/trainjob"

// KueueCRDs is Kueue's CRD folder in the pinned module, for
// Options.ExtraCRDDirs: the bases, without the conversion-webhook patches
// (everything reads v1beta2, the stored version, so nothing converts).
func KueueCRDs() (string, error) {
	return moduleSubdir(KueueModule, "config/components/crd/bases")
}

var (
	kueueOnce sync.Once
	kueueBin  string
	kueueErr  error
)

// KueueBinary returns the path of Kueue's manager at the version go.mod
// pins, built from the Go module proxy by test/kueue/build.sh (once per
// version, into the cache; `make kueue` runs the same script).
func KueueBinary() (string, error) {
	kueueOnce.Do(func() {
		version, err := moduleVersion(KueueModule)
		if err != nil {
			kueueErr = err
			return
		}
		kueueBin, kueueErr = runBuildScript("Kueue "+version, "test/kueue/build.sh", "KUEUE_VERSION="+version)
	})
	return kueueBin, kueueErr
}

// moduleVersion is the version of module go.mod pins.
func moduleVersion(module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module)
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("the version of %s (go list -m): %w", module, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Kueue is a running Kueue manager.
type Kueue struct {
	// Namespace is Kueue's own namespace (its configuration's).
	Namespace string
	// Log is the manager's log file, in the Env's LogDir.
	Log string

	cmd *exec.Cmd
	dir string
	env *Env
	// webhooks are Kueue's webhook configurations, registered once it is
	// ready and removed before it stops.
	webhooks []client.Object
	done     chan struct{}
	err      error // cmd.Wait's result, set before done closes
	release  func()
	stop     sync.Once
}

// StartKueue runs Kueue's manager against the Env's apiserver, as the
// admin, with one integration enabled (TrainJob), and registers its
// webhooks as an install does (kueueWebhooks: Kueue's and TrainJob's), so
// Kueue's mutating webhook and mpiguard's both act on every TrainJob
// create, and each one's validating webhook judges the other's changes.
// Kueue serves them with the suite's webhook certificate (envtest's CA, the
// one mpiguard's webhooks are served with). What a cluster provides by
// other means is turned off: internal cert management; VisibilityOnDemand
// (an aggregated API server); leader election; the metrics server serves a
// self-signed certificate. Kueue's CRDs must be installed
// (Options.ExtraCRDDirs: KueueCRDs). It returns once Kueue is ready and its
// webhooks registered; Stop removes them and stops it.
func (e *Env) StartKueue(ctx context.Context) (*Kueue, error) {
	bin, err := KueueBinary()
	if err != nil {
		return nil, err
	}
	k := &Kueue{Namespace: "kueue-system", Log: filepath.Join(e.LogDir, "kueue.log"), done: make(chan struct{}), env: e}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.Namespace}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating Kueue's namespace: %w", err)
	}
	if k.dir, err = os.MkdirTemp("", "mpiguard-kueue-"); err != nil {
		return nil, err
	}
	config, probe, webhookPort, err := k.writeFiles(e)
	if err != nil {
		_ = os.RemoveAll(k.dir)
		return nil, err
	}
	logFile, err := os.Create(k.Log)
	if err != nil {
		_ = os.RemoveAll(k.dir)
		return nil, err
	}
	defer func() { _ = logFile.Close() }() // the child has its own descriptor
	k.cmd = kueueCommand(bin, k.dir, "--config", config, "--zap-log-level=3")
	k.cmd.Env = append(append(k.cmd.Env, os.Environ()...), "KUBECONFIG="+filepath.Join(k.dir, "kubeconfig"))
	k.cmd.Stdout, k.cmd.Stderr = logFile, logFile
	// From a thread kept until Stop: the parent-death signal is the forking
	// thread's (parentdeath.go).
	k.release, err = startOnOwnThread(k.cmd.Start)
	if err != nil {
		k.release()
		_ = os.RemoveAll(k.dir)
		return nil, fmt.Errorf("starting Kueue: %w", err)
	}
	go func() {
		k.err = k.cmd.Wait()
		close(k.done)
	}()
	if err := k.waitReady(ctx, probe); err != nil {
		_ = k.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, k.Log)
	}
	if err := k.registerWebhooks(ctx, webhookPort); err != nil {
		_ = k.Stop()
		return nil, err
	}
	return k, nil
}

// registerWebhooks registers Kueue's webhooks, served on port.
func (k *Kueue) registerWebhooks(ctx context.Context, port int) error {
	wh := k.env.Testenv.WebhookInstallOptions
	mutating, validating, err := kueueWebhooks(kueueHost, port, wh.LocalServingCAData)
	if err != nil {
		return err
	}
	for _, m := range mutating {
		k.webhooks = append(k.webhooks, m)
	}
	for _, v := range validating {
		k.webhooks = append(k.webhooks, v)
	}
	for _, obj := range k.webhooks {
		if err := k.env.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("registering Kueue's webhooks (%s): %w", obj.GetName(), err)
		}
	}
	return nil
}

// kueueHost is the address Kueue's webhook server listens on: the suite's
// webhook certificate is valid for it.
const kueueHost = "127.0.0.1"

// writeFiles writes Kueue's kubeconfig, metrics certificate and
// configuration into k.dir, and returns the configuration's path, the
// health probe address and the webhook server's port.
func (k *Kueue) writeFiles(e *Env) (config, probe string, webhookPort int, err error) {
	if err := os.WriteFile(filepath.Join(k.dir, "kubeconfig"), e.Testenv.KubeConfig, 0o600); err != nil {
		return "", "", 0, err
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP(kueueHost)}, nil)
	if err != nil {
		return "", "", 0, err
	}
	metricsCerts := filepath.Join(k.dir, "metrics-certs")
	if err := os.Mkdir(metricsCerts, 0o700); err != nil {
		return "", "", 0, err
	}
	if err := os.WriteFile(filepath.Join(metricsCerts, "tls.crt"), certPEM, 0o600); err != nil {
		return "", "", 0, err
	}
	if err := os.WriteFile(filepath.Join(metricsCerts, "tls.key"), keyPEM, 0o600); err != nil {
		return "", "", 0, err
	}
	wh := e.Testenv.WebhookInstallOptions
	ports, err := freeLoopbackPorts(kueueHost, 3, wh.LocalServingPort)
	if err != nil {
		return "", "", 0, err
	}
	addr := func(port int) string { return net.JoinHostPort(kueueHost, strconv.Itoa(port)) }
	probe = addr(ports[2])
	cfg := map[string]any{
		"apiVersion": "config.kueue.x-k8s.io/v1beta2",
		"kind":       "Configuration",
		"namespace":  k.Namespace,
		// The suite's serving certificate (tls.crt, tls.key), as mpiguard's.
		"webhook":                map[string]any{"host": kueueHost, "port": ports[0], "certDir": wh.LocalServingCertDir},
		"metrics":                map[string]any{"bindAddress": addr(ports[1])},
		"health":                 map[string]any{"healthProbeBindAddress": probe},
		"leaderElection":         map[string]any{"leaderElect": false},
		"internalCertManagement": map[string]any{"enable": false},
		"integrations":           map[string]any{"frameworks": []string{KueueTrainJobFramework}},
		"featureGates":           map[string]bool{"VisibilityOnDemand": false},
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		return "", "", 0, err
	}
	config = filepath.Join(k.dir, "config.yaml")
	return config, probe, ports[0], os.WriteFile(config, raw, 0o600)
}

// waitReady returns once Kueue's readiness probe answers 200 (its webhook
// server listens, its caches started).
func (k *Kueue) waitReady(ctx context.Context, probe string) error {
	return waitOK(ctx, &http.Client{Timeout: 2 * time.Second}, "http://"+probe+"/readyz", 2*time.Minute, k.done, func() error { return k.err })
}

// Stop removes Kueue's webhooks (with failurePolicy Fail, they would refuse
// every TrainJob create once Kueue is gone), stops Kueue (SIGTERM, then
// SIGKILL after 10 s) and removes its files. It is safe to call twice.
func (k *Kueue) Stop() error {
	var err error
	k.stop.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, obj := range k.webhooks {
			if derr := k.env.Client.Delete(ctx, obj); derr != nil && !apierrors.IsNotFound(derr) {
				err = errors.Join(err, fmt.Errorf("removing Kueue's webhooks (%s): %w", obj.GetName(), derr))
			}
		}
		if k.cmd.Process != nil {
			_ = k.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-k.done:
			case <-time.After(10 * time.Second):
				_ = k.cmd.Process.Kill()
				<-k.done
				err = errors.Join(err, errors.New("kueue did not stop within 10s of SIGTERM; killed"))
			}
		}
		k.release()
		_ = os.RemoveAll(k.dir)
	})
	return err
}
