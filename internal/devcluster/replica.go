package devcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
)

// Leader election of a multi-replica environment. A stopped replica gives its
// lease up (LeaderElectionReleaseOnCancel), so the other takes over at its
// next retry: RetryPeriod is what a failover costs a test. The lease and
// renew deadline stay generous so a busy 2-core machine never makes the
// leader miss a renewal, which would stop its whole manager, webhooks included.
const (
	replicaLeaseDuration = 8 * time.Second
	replicaRenewDeadline = 6 * time.Second
	replicaRetryPeriod   = 500 * time.Millisecond
)

// Replica is one mpiguard manager of an Env, as one pod of the Deployment.
type Replica struct {
	Manager ctrl.Manager
	// DecisionLog is the path of this replica's decision log ("" when the
	// suite's components log decisions elsewhere).
	DecisionLog string
	// Addr is where this replica's webhook server listens.
	Addr string
	// ProbeAddr is where it serves /healthz and /readyz; "" when it serves
	// none (only StartExtraReplica's replicas do).
	ProbeAddr string
	// MetricsAddr is where it serves /metrics over HTTPS when
	// Options.Metrics is on; "" otherwise.
	MetricsAddr string

	cancel   context.CancelFunc
	done     chan struct{}
	err      error // mgr.Start's result, set before done closes
	stopOnce sync.Once
	stopErr  error
}

// replicaConfig is what differs between the replicas of one Env.
type replicaConfig struct {
	index       int
	host        string
	port        int
	decisionLog string
	// leaderElect also sets what only a second manager in this process needs.
	leaderElect bool
	// probeAddr serves /healthz and /readyz there; "" serves no probes.
	probeAddr string
	// restarted: a manager of this process already registered the
	// controller names (RestartManagers).
	restarted bool
}

// electingReplica is replica index of an Env with Options.Replicas > 1
// (leader election on), its webhook server on port.
func (e *Env) electingReplica(index, port int) replicaConfig {
	return replicaConfig{
		index: index, host: e.Testenv.WebhookInstallOptions.LocalServingHost, port: port,
		decisionLog: fmt.Sprintf("decisions-%d.jsonl", index), leaderElect: true,
	}
}

// startReplica builds a manager exactly as `mpiguard serve` does, sets up the
// Env's components (e.opts, e.components) and starts it; it returns without
// waiting for it to be ready.
func (e *Env) startReplica(ctx context.Context, rc replicaConfig) (*Replica, error) {
	opts, components := e.opts, e.components
	so := app.DefaultServeOptions()
	so.WebhookHost, so.WebhookPort = rc.host, rc.port
	so.CertDir = e.Testenv.WebhookInstallOptions.LocalServingCertDir
	so.MetricsAddr, so.ProbeAddr = "0", "0"
	if rc.probeAddr != "" {
		so.ProbeAddr = rc.probeAddr
	}
	if opts.Metrics {
		ports, err := freeLoopbackPorts(rc.host, 1, rc.port)
		if err != nil {
			return nil, fmt.Errorf("finding a metrics port (replica %d): %w", rc.index, err)
		}
		so.MetricsAddr = net.JoinHostPort(rc.host, strconv.Itoa(ports[0]))
	}
	so.EnableHTTP2 = opts.EnableHTTP2
	if e.clientCA != "" {
		so.ClientCA, so.ClientCertNames = e.clientCA, []string{WebhookClientName}
	}
	so.GracefulShutdownTime = 10 * time.Second
	if rc.leaderElect {
		so.LeaderElect = true
		so.LeaderElectionNS = e.PolicyNamespace
		so.LeaseDuration, so.RenewDeadline, so.RetryPeriod = replicaLeaseDuration, replicaRenewDeadline, replicaRetryPeriod
		so.LeaderElectionReleaseOnCancel = true
		// Controller names are unique per process; replica 0 still checks
		// them, so a duplicate within app.Setup is caught.
		so.SkipControllerNameValidation = rc.index > 0
	}
	if rc.restarted || opts.SecondCluster {
		so.SkipControllerNameValidation = true
	}
	mgr, err := app.NewManager(e.ManagerConfig, so)
	if err != nil {
		return nil, err
	}
	r := &Replica{Manager: mgr, Addr: net.JoinHostPort(rc.host, strconv.Itoa(rc.port)), ProbeAddr: rc.probeAddr, done: make(chan struct{})}
	if opts.Metrics {
		r.MetricsAddr = so.MetricsAddr
	}
	if components.Policies.DecisionLog == "stdout" {
		// Keep test output readable: decisions go next to the control plane's logs.
		components.Policies.DecisionLog = filepath.Join(e.LogDir, rc.decisionLog)
		r.DecisionLog = components.Policies.DecisionLog
	}
	mctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	if err := app.Setup(mctx, mgr, components); err != nil {
		cancel()
		return nil, fmt.Errorf("app.Setup (replica %d): %w", rc.index, err)
	}
	if opts.Setup != nil {
		if err := opts.Setup(mctx, mgr); err != nil {
			cancel()
			return nil, fmt.Errorf("extra setup (replica %d): %w", rc.index, err)
		}
	}
	go func() {
		r.err = mgr.Start(mctx)
		close(r.done)
	}()
	return r, nil
}

// Stop stops this replica's manager (giving up its lease if it leads) and
// waits for it; the other replicas keep serving. It is safe to call twice.
func (r *Replica) Stop() error {
	r.stopOnce.Do(func() {
		r.cancel()
		select {
		case <-r.done:
			if r.err != nil {
				r.stopErr = fmt.Errorf("manager at %s: %w", r.Addr, r.err)
			}
		case <-time.After(30 * time.Second):
			r.stopErr = fmt.Errorf("manager at %s did not stop within 30s", r.Addr)
		}
	})
	return r.stopErr
}

// Running says whether the replica's manager still runs (not stopped, and
// not ended by itself, as on a lost lease).
func (r *Replica) Running() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// IsLeader says whether this replica holds the lease and still runs: its
// reconcilers are the ones that act.
func (r *Replica) IsLeader() bool {
	select {
	case <-r.Manager.Elected():
		return r.Running()
	default:
		return false
	}
}

// waitReady returns once the replica's webhook server answers TLS and its
// cache synced, so the first request of a test does not race its start.
func (r *Replica) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	checker := r.Manager.GetWebhookServer().StartedChecker()
	for checker(nil) != nil {
		if !r.Running() {
			return fmt.Errorf("manager at %s stopped while starting: %w", r.Addr, r.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server at %s did not start within 60s", r.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	syncCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if !r.Manager.GetCache().WaitForCacheSync(syncCtx) {
		return fmt.Errorf("cache of the manager at %s did not sync within 60s", r.Addr)
	}
	return nil
}

// waitLeader returns once one of replicas leads, so the reconcilers run.
func waitLeader(ctx context.Context, replicas []*Replica) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	elected := make(chan struct{}, len(replicas))
	for _, r := range replicas {
		go func() {
			select {
			case <-r.Manager.Elected():
				elected <- struct{}{}
			case <-ctx.Done():
			}
		}()
	}
	select {
	case <-elected:
		return nil
	case <-ctx.Done():
		return errors.New("no replica became leader within 60s")
	}
}

// freeLoopbackPorts returns n distinct ports on host that nothing listens on
// and that are not taken (envtest's webhook port, reserved for the proxy);
// the replicas' webhook servers bind them right after. Every listener stays
// open until all are found, so no port is returned twice.
//
// They are picked from fixedPorts, below the kernel's ephemeral range
// (ip_local_port_range, 32768-60999 by default), not by listening on port 0:
// the kernel gives every outgoing connection (the control plane's, the
// clients') a source port from the ephemeral range, and a port picked there
// and closed could be taken by one of them before its component binds it
// (CI saw a replica's metrics server fail with "address already in use").
func freeLoopbackPorts(host string, n int, taken int) (ports []int, err error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			err = errors.Join(err, l.Close())
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("no free port on %s in %d-%d after %d tries", host, fixedPorts.first, fixedPorts.last, tries)
		}
		port := fixedPorts.first + rand.IntN(fixedPorts.last-fixedPorts.first+1)
		if port == taken {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			continue // in use
		}
		held = append(held, l)
		ports = append(ports, port)
	}
	return ports, nil
}

// fixedPorts is where freeLoopbackPorts picks: registered ports no common
// service uses on a test machine, below the ephemeral range.
var fixedPorts = struct{ first, last int }{20000, 32767}
