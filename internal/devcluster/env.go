// Package devcluster runs mpiguard against a real local control plane, for
// `make run` (cmd/mpiguard-dev) and the integration tests (test/framework
// adds their Ginkgo helpers on top): kube-apiserver and etcd (built from source by test/controlplane/build.sh)
// through controller-runtime's envtest, with the Trainer and JobSet CRDs from the
// pinned modules, mpiguard's own CRDs and webhook configurations from config/,
// and an mpiguard manager wired by cmd/mpiguard/app.Setup serving the webhooks
// over TLS to that apiserver.
package devcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/cmd/mpiguard/app/scheme"
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
	// Replicas runs the shipped topology when above 1: that many managers,
	// each with leader election on (Lease in the policy namespace), its own
	// webhook port and decision log (decisions-N.jsonl in LogDir), behind a
	// Proxy on envtest's webhook address that spreads connections round-robin.
	// 0 or 1: one manager on that address, no leader election. Setup runs on
	// every replica.
	Replicas int
	// ManagerConfig, when set, returns the identity mpiguard's managers run
	// as instead of the admin's Config: a ServiceAccount bound only to the
	// RBAC config/ ships, for example. It runs once the control plane and
	// mpiguard's namespace exist, before any manager starts.
	ManagerConfig func(ctx context.Context, e *Env) (*rest.Config, error)
	// Metrics serves each replica's metrics as `mpiguard serve` does (HTTPS,
	// every scrape authenticated and authorized by the apiserver) on a free
	// loopback port, Replica.MetricsAddr; off, metrics are not served.
	Metrics bool
	// ClientAuth runs mpiguard with --client-ca, and the kube-apiserver with
	// an AdmissionConfiguration that presents a client certificate that CA
	// signed (common name WebhookClientName) to webhooks.
	ClientAuth bool
	// KubeControllers runs kube-controller-manager with only these
	// controllers (its --controllers, e.g. "job"), for specs where Jobs must
	// really create pods; none run otherwise (controllermanager.go).
	KubeControllers []string
	// Workloads makes pods really run, as in a cluster (workloads.go):
	// kube-controller-manager (job, resourcequota, garbage collector and
	// namespace controllers, with KubeControllers), kube-scheduler, KWOK
	// with fake GPU nodes, and the JobSet and Trainer controllers in every
	// namespace. nil: none of these run unless asked one by one
	// (KubeControllers, StartJobSetController, Setup: TrainerController).
	// Needs the manager (the Trainer runs in it).
	Workloads *Workloads
	// AuditPolicy, when set, is an audit.k8s.io/v1 Policy (YAML): the
	// kube-apiserver writes the events it selects to Env.AuditLog.
	AuditPolicy string
	// DefaultAdmissionChain runs the kube-apiserver with its default-enabled
	// admission plugins, as a cluster's runs: envtest turns the
	// ServiceAccount plugin off, this leaves it on (with envtest's
	// service-account issuer and keys), and adds kube-controller-manager's
	// serviceaccount controller to KubeControllers, which gives every
	// namespace its "default" ServiceAccount as in a cluster.
	DefaultAdmissionChain bool
	// SecondCluster starts this Env in a process where another Env already
	// runs mpiguard (a second cluster: MultiKueue's manager and worker).
	// controller-runtime checks controller names once per process, so its
	// replicas skip that check: the first Env's replica 0 made it.
	SecondCluster bool
}

// Env is a running integration environment.
type Env struct {
	Config *rest.Config
	Client client.Client
	// Manager is replica 0's manager: the only one unless Options.Replicas > 1.
	Manager ctrl.Manager
	// Replicas are the running mpiguard managers, one unless Options.Replicas > 1.
	Replicas []*Replica
	// Proxy is the webhook endpoint in front of the replicas when
	// Options.Replicas > 1; nil otherwise (the one manager serves it itself).
	Proxy   *Proxy
	Testenv *envtest.Environment
	// LogDir holds the apiserver's and etcd's logs; kept when a test failed.
	LogDir string
	// AuditLog is the kube-apiserver's audit log (JSON lines) when
	// Options.AuditPolicy is set; "" otherwise.
	AuditLog string
	// PolicyNamespace is mpiguard's own namespace (policy ConfigMaps live there).
	PolicyNamespace string
	// ManagerConfig is the identity mpiguard's managers run as: Config unless
	// Options.ManagerConfig gave another.
	ManagerConfig *rest.Config
	// WebhookClientCA signs the kube-apiserver's webhook client certificate
	// when Options.ClientAuth is on; nil otherwise.
	WebhookClientCA *TestCA

	// clientCA is mpiguard's --client-ca file when Options.ClientAuth is on.
	clientCA string
	// opts and components are what the replicas were started with
	// (StartExtraReplica starts one more alike); extraReplicas counts the
	// ones it started, so each gets its own index and decision log.
	opts          Options
	components    app.Options
	extraReplicas int

	logs []*os.File
	// runDir holds the control plane's shims and files (parentdeath.go).
	runDir string
	// releaseThread gives back the thread that started the control plane
	// (parentdeath.go).
	releaseThread func()
	// procs are the components it started itself (component.go):
	// kube-controller-manager, kube-scheduler, KWOK.
	procs []*component
	// stopJobSet stops JobSet's controller when Options.Workloads runs it.
	stopJobSet func() error
	// quotaControllers counts the StartQuotaController starts, to name each
	// one's files.
	quotaControllers int
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
	removeStaleRunDirs()
	mutating, validating, err := shippedWebhooks()
	if err != nil {
		return nil, err
	}
	e := &Env{}
	if e.LogDir, err = newLogDir(opts.Name); err != nil {
		return nil, err
	}
	e.Testenv = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
		// The kustomize build of config/webhook, as it ships (webhooks.go).
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			MutatingWebhooks:   mutating,
			ValidatingWebhooks: validating,
		},
		ControlPlaneStopTimeout: 30 * time.Second,
	}
	if err := e.wireLogs(); err != nil {
		return nil, err
	}
	if opts.AuditPolicy != "" {
		if err := e.configureAuditLog(opts.AuditPolicy); err != nil {
			return nil, err
		}
	}
	if opts.DefaultAdmissionChain {
		e.Testenv.ControlPlane.GetAPIServer().Configure().Disable("disable-admission-plugins")
		if !slices.Contains(opts.KubeControllers, "serviceaccount") {
			opts.KubeControllers = append(slices.Clip(opts.KubeControllers), "serviceaccount")
		}
	}
	if err := e.startControlPlane(opts.ClientAuth); err != nil {
		e.closeLogs()
		return nil, fmt.Errorf("starting kube-apiserver and etcd (logs in %s): %w", e.LogDir, err)
	}
	e.Client, err = client.New(e.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		_ = e.Stop(false)
		return nil, err
	}
	if opts.Workloads != nil {
		if opts.NoManager {
			_ = e.Stop(false)
			return nil, errors.New("Options.Workloads needs mpiguard's manager (the Trainer runs in it), not NoManager")
		}
		if err := e.startWorkloads(ctx, opts.Workloads, opts.KubeControllers); err != nil {
			_ = e.Stop(true)
			return nil, err
		}
		opts.Setup = withTrainer(opts.Setup)
	} else if len(opts.KubeControllers) > 0 {
		if err := e.startControllerManager(ctx, opts.KubeControllers); err != nil {
			_ = e.Stop(true)
			return nil, err
		}
	}
	if opts.NoManager {
		return e, nil
	}
	if err := e.startManagers(ctx, opts); err != nil {
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
	reportCRDs, err := OpenReportsCRDs()
	if err != nil {
		return nil, err
	}
	dirs := []string{trainerCRDs, jobSetCRDs, reportCRDs}
	if own := filepath.Join(RepoRoot(), "config", "crd", "bases"); dirExists(own) {
		dirs = append(dirs, own)
	}
	return append(dirs, extra...), nil
}

// startManagers starts mpiguard: one manager on envtest's webhook address, or,
// with Options.Replicas > 1, as many managers behind a Proxy on that address.
func (e *Env) startManagers(ctx context.Context, opts Options) error {
	components := app.DefaultOptions()
	if opts.Components != nil {
		components = *opts.Components
	}
	// mpiguard's own namespace holds the policy ConfigMaps (and the replicas' lease).
	own := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: components.Policies.Namespace}}
	if err := e.Client.Create(ctx, own); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating mpiguard's namespace: %w", err)
	}
	e.PolicyNamespace = own.Name
	e.opts, e.components = opts, components
	e.ManagerConfig = e.Config
	if opts.ManagerConfig != nil {
		cfg, err := opts.ManagerConfig(ctx, e)
		if err != nil {
			return fmt.Errorf("the managers' identity (Options.ManagerConfig): %w", err)
		}
		e.ManagerConfig = cfg
	}
	wh := e.Testenv.WebhookInstallOptions
	if opts.Replicas <= 1 {
		r, err := e.startReplica(ctx, replicaConfig{host: wh.LocalServingHost, port: wh.LocalServingPort, decisionLog: "decisions.jsonl"})
		if err != nil {
			return err
		}
		e.Replicas = []*Replica{r}
	} else {
		ports, err := freeLoopbackPorts(wh.LocalServingHost, opts.Replicas, wh.LocalServingPort)
		if err != nil {
			return fmt.Errorf("finding ports for the replicas: %w", err)
		}
		backends := make([]string, len(ports))
		for i, port := range ports {
			backends[i] = net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(port))
		}
		// Up before the managers: the leader's first reconciles already call webhooks.
		if e.Proxy, err = StartProxy(net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(wh.LocalServingPort)), backends); err != nil {
			return err
		}
		for i, port := range ports {
			r, err := e.startReplica(ctx, e.electingReplica(i, port))
			if err != nil {
				return err
			}
			e.Replicas = append(e.Replicas, r)
		}
	}
	e.Manager = e.Replicas[0].Manager
	for _, r := range e.Replicas {
		if err := r.waitReady(ctx); err != nil {
			return err
		}
	}
	return waitLeader(ctx, e.Replicas)
}

// startControlPlane starts kube-apiserver and etcd through their shims, from
// a thread kept for them, so that they die with this process, and with their
// files in a run folder (parentdeath.go). If it fails, whatever it started is
// stopped.
func (e *Env) startControlPlane(clientAuth bool) error {
	var err error
	if e.runDir, err = newRunDir(e.Testenv.BinaryAssetsDirectory); err != nil {
		return fmt.Errorf("making the control plane's run folder: %w", err)
	}
	cp := &e.Testenv.ControlPlane
	if cp.Etcd == nil {
		cp.Etcd = &envtest.Etcd{}
	}
	api := cp.GetAPIServer()
	if api.Path, cp.Etcd.Path, err = controlPlaneShims(e.runDir); err != nil {
		e.releaseControlPlane()
		return err
	}
	api.CertDir, cp.Etcd.DataDir = filepath.Join(e.runDir, "apiserver-certs"), filepath.Join(e.runDir, "etcd-data")
	if clientAuth {
		if e.clientCA, err = e.configureWebhookClientCert(filepath.Join(e.runDir, "webhook-client")); err != nil {
			e.releaseControlPlane()
			return fmt.Errorf("configuring the apiserver's webhook client certificate: %w", err)
		}
	}
	e.releaseThread, err = startOnOwnThread(func() error {
		var err error
		e.Config, err = e.Testenv.Start()
		return err
	})
	if err != nil {
		_ = e.Testenv.Stop()
		e.releaseControlPlane()
	}
	return err
}

// releaseControlPlane, once the control plane is stopped, gives back the
// thread that started it and removes its run folder.
func (e *Env) releaseControlPlane() {
	if e.releaseThread != nil {
		e.releaseThread()
	}
	if e.runDir != "" {
		_ = os.RemoveAll(e.runDir)
		e.runDir = ""
	}
}

// Stop stops mpiguard and the control plane. keepLogs keeps the control plane's
// logs (pass true when a test failed); otherwise they are removed.
func (e *Env) Stop(keepLogs bool) error {
	var errs []error
	errs = append(errs, e.stopReplicas()...)
	if e.Proxy != nil {
		if err := e.Proxy.Close(); err != nil {
			errs = append(errs, fmt.Errorf("proxy: %w", err))
		}
	}
	if err := e.stopWorkloadControllers(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, e.stopComponents()...)
	if e.Testenv != nil {
		if err := e.Testenv.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("control plane: %w", err))
		}
	}
	e.releaseControlPlane()
	e.closeLogs()
	if keepLogs {
		fmt.Fprintf(os.Stderr, "control plane logs kept in %s\n", e.LogDir)
	} else if e.LogDir != "" {
		_ = os.RemoveAll(e.LogDir)
	}
	return errors.Join(errs...)
}

// stopReplicas stops every replica at once (each may take its graceful
// shutdown time) and returns their errors.
func (e *Env) stopReplicas() []error {
	errs := make([]error, len(e.Replicas))
	var wg sync.WaitGroup
	for i, r := range e.Replicas {
		wg.Go(func() { errs[i] = r.Stop() })
	}
	wg.Wait()
	return errs
}

// NewNamespace creates a namespace with a generated name and the given labels.
func (e *Env) NewNamespace(ctx context.Context, labels map[string]string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "mpiguard-test-", Labels: labels}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return nil, err
	}
	return ns, nil
}

// DeleteNamespace deletes ns. envtest runs no namespace controller (unless
// Options.Workloads), so the namespace stays Terminating; tests therefore use
// a fresh namespace each.
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
