// Package framework runs mpiguard's integration tests against a real control
// plane: kube-apiserver and etcd (built from source by test/controlplane/build.sh)
// through controller-runtime's envtest, with the Trainer and JobSet CRDs from the
// pinned modules, mpiguard's own CRDs and webhook configurations from config/,
// and an mpiguard manager wired by cmd/mpiguard/app.Setup serving the webhooks
// over TLS to that apiserver.
package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
)

// Options configures an integration environment.
type Options struct {
	// Components selects mpiguard's controllers and webhooks (default: all).
	Components *app.Options
	// ExtraCRDDirs are loaded besides the Trainer, JobSet and mpiguard CRDs.
	ExtraCRDDirs []string
	// Setup runs after app.Setup and before the manager starts: register extra
	// controllers (the Trainer's own controller for fidelity tests, for example).
	Setup func(ctx context.Context, mgr ctrl.Manager) error
	// NoManager starts only the control plane (for tests that run their own).
	NoManager bool
	// Name labels the log folder (default "suite").
	Name string
	// EnableHTTP2 lets the webhook server negotiate HTTP/2 (mpiguard serve
	// --enable-http2); off, as shipped.
	EnableHTTP2 bool
}

// Env is a running integration environment.
type Env struct {
	Config  *rest.Config
	Client  client.Client
	Manager ctrl.Manager
	Testenv *envtest.Environment
	// LogDir holds the apiserver's and etcd's logs; kept when a test failed.
	LogDir string
	// PolicyNamespace is mpiguard's own namespace (policy ConfigMaps live there).
	PolicyNamespace string

	cancel  context.CancelFunc
	mgrDone chan error
	logs    []*os.File
}

// Start brings up the control plane and, unless NoManager, mpiguard itself.
func Start(ctx context.Context, opts Options) (*Env, error) {
	assets, err := BinaryAssets()
	if err != nil {
		return nil, err
	}
	crdDirs, err := crdDirectories(opts.ExtraCRDDirs)
	if err != nil {
		return nil, err
	}
	if killed, err := reapOrphanedControlPlanes(assets); err != nil {
		return nil, err
	} else if len(killed) > 0 {
		fmt.Fprintf(os.Stderr, "killed %d kube-apiserver/etcd processes orphaned by an earlier test run (pids %v)\n", len(killed), killed)
	}
	e := &Env{}
	if e.LogDir, err = newLogDir(opts.Name); err != nil {
		return nil, err
	}
	e.Testenv = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths:                    []string{filepath.Join(RepoRoot(), "config", "webhook", "manifests.yaml")},
			IgnoreErrorIfPathMissing: true,
		},
		ControlPlaneStopTimeout: 30 * time.Second,
	}
	if err := e.wireLogs(); err != nil {
		return nil, err
	}
	if e.Config, err = e.Testenv.Start(); err != nil {
		e.closeLogs()
		return nil, fmt.Errorf("starting kube-apiserver and etcd (logs in %s): %w", e.LogDir, err)
	}
	e.Client, err = client.New(e.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		_ = e.Stop(false)
		return nil, err
	}
	if opts.NoManager {
		return e, nil
	}
	if err := e.startManager(ctx, opts); err != nil {
		_ = e.Stop(false)
		return nil, err
	}
	return e, nil
}

func crdDirectories(extra []string) ([]string, error) {
	trainerCRDs, err := TrainerCRDs()
	if err != nil {
		return nil, err
	}
	jobSetCRDs, err := JobSetCRDs()
	if err != nil {
		return nil, err
	}
	dirs := []string{trainerCRDs, jobSetCRDs}
	if own := filepath.Join(RepoRoot(), "config", "crd", "bases"); dirExists(own) {
		dirs = append(dirs, own)
	}
	return append(dirs, extra...), nil
}

func (e *Env) startManager(ctx context.Context, opts Options) error {
	wh := e.Testenv.WebhookInstallOptions
	so := app.DefaultServeOptions()
	so.WebhookHost, so.WebhookPort, so.CertDir = wh.LocalServingHost, wh.LocalServingPort, wh.LocalServingCertDir
	so.MetricsAddr, so.ProbeAddr = "0", "0"
	so.EnableHTTP2 = opts.EnableHTTP2
	so.GracefulShutdownTime = 10 * time.Second
	mgr, err := app.NewManager(e.Config, so)
	if err != nil {
		return err
	}
	components := app.DefaultOptions()
	if opts.Components != nil {
		components = *opts.Components
	}
	if components.Policies.DecisionLog == "stdout" {
		// Keep test output readable: decisions go next to the control plane's logs.
		components.Policies.DecisionLog = filepath.Join(e.LogDir, "decisions.jsonl")
	}
	// mpiguard's own namespace holds the policy ConfigMaps.
	own := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: components.Policies.Namespace}}
	if err := e.Client.Create(ctx, own); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating mpiguard's namespace: %w", err)
	}
	e.PolicyNamespace = own.Name
	mctx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	if err := app.Setup(mctx, mgr, components); err != nil {
		return fmt.Errorf("app.Setup: %w", err)
	}
	if opts.Setup != nil {
		if err := opts.Setup(mctx, mgr); err != nil {
			return fmt.Errorf("extra setup: %w", err)
		}
	}
	e.Manager = mgr
	e.mgrDone = make(chan error, 1)
	go func() { e.mgrDone <- mgr.Start(mctx) }()
	return e.waitReady(ctx)
}

// waitReady returns once the webhook server answers TLS and the cache synced,
// so the first request of a test does not race the manager's start.
func (e *Env) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	checker := e.Manager.GetWebhookServer().StartedChecker()
	for {
		select {
		case err := <-e.mgrDone:
			return fmt.Errorf("manager stopped while starting: %w", err)
		default:
		}
		if checker(nil) == nil {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("webhook server did not start within 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	syncCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if !e.Manager.GetCache().WaitForCacheSync(syncCtx) {
		return errors.New("manager cache did not sync within 60s")
	}
	return nil
}

// Stop stops mpiguard and the control plane. keepLogs keeps the control plane's
// logs (pass true when a test failed); otherwise they are removed.
func (e *Env) Stop(keepLogs bool) error {
	var errs []error
	if e.cancel != nil {
		e.cancel()
		select {
		case err := <-e.mgrDone:
			if err != nil {
				errs = append(errs, fmt.Errorf("manager: %w", err))
			}
		case <-time.After(30 * time.Second):
			errs = append(errs, errors.New("manager did not stop within 30s"))
		}
	}
	if e.Testenv != nil {
		if err := e.Testenv.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("control plane: %w", err))
		}
	}
	e.closeLogs()
	if keepLogs {
		fmt.Fprintf(os.Stderr, "control plane logs kept in %s\n", e.LogDir)
	} else if e.LogDir != "" {
		_ = os.RemoveAll(e.LogDir)
	}
	return errors.Join(errs...)
}

// NewNamespace creates a namespace with a generated name and the given labels.
func (e *Env) NewNamespace(ctx context.Context, labels map[string]string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "mpiguard-test-", Labels: labels}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return nil, err
	}
	return ns, nil
}

// DeleteNamespace deletes ns. envtest runs no namespace controller, so the
// namespace stays Terminating; tests therefore use a fresh namespace each.
func (e *Env) DeleteNamespace(ctx context.Context, ns *corev1.Namespace) error {
	err := e.Client.Delete(ctx, ns)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// SuiteStartTimeout bounds a suite's BeforeSuite: a cold control-plane build
// (test/controlplane/build.sh) takes minutes on 2 cores.
const SuiteStartTimeout = 20 * time.Minute
