package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mpiguard/mpiguard/internal/audit"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/kueuecheck"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reload"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/internal/reservations/admit"
	"github.com/mpiguard/mpiguard/internal/reservations/retire"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
	"github.com/mpiguard/mpiguard/networkpolicies"
	"github.com/mpiguard/mpiguard/webhooks/deletes"
	"github.com/mpiguard/mpiguard/webhooks/trainjob"
)

// PolicyOptions configures the policy engine behind the TrainJob webhooks.
type PolicyOptions struct {
	// DecisionLog is where one JSON line per decision goes: "stdout", "stderr",
	// a file path (appended), or "" for none.
	DecisionLog string
	// DecisionLogVerbosity says which decisions the decision log records:
	// denials, decisions (every decision and deletion) or input (every
	// decision with its policy input).
	DecisionLogVerbosity string
	// DocsBaseURL is where denials link to (the docs section that explains
	// each policy's denials); "" for no links.
	DocsBaseURL string
	// ReservationGrace is how long a quota reservation is taken on trust before
	// its TrainJob must exist (a create that failed after admission, a forged
	// review, a replica that died before answering).
	ReservationGrace time.Duration
	// MaxUnconfirmedReservations caps, per namespace, the reservations of
	// admitted creates whose TrainJob has not appeared yet.
	MaxUnconfirmedReservations int
	// Namespace holds the policy ConfigMaps (mpiguard's own namespace).
	Namespace string
	// EvalTimeout bounds one evaluation of the policy set; past it the
	// request fails closed, naming the policy that ran too long.
	EvalTimeout time.Duration
}

// DefaultPolicyOptions logs decisions to stdout.
func DefaultPolicyOptions() PolicyOptions {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "mpiguard-system"
	}
	return PolicyOptions{DecisionLog: "stdout", DecisionLogVerbosity: string(engine.LogDecisions), DocsBaseURL: pipeline.DefaultDocsBaseURL, ReservationGrace: 30 * time.Second, Namespace: ns, EvalTimeout: engine.DefaultEvalTimeout,
		MaxUnconfirmedReservations: admit.DefaultMaxUnconfirmed}
}

// AddFlags binds policy flags.
func (o *PolicyOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DecisionLog, "decision-log", o.DecisionLog, "Decision log destination: stdout, stderr, a file path (appended), or empty to disable.")
	fs.StringVar(&o.DecisionLogVerbosity, "decision-log-verbosity", o.DecisionLogVerbosity, "What the decision log records: denials (denied requests only), decisions (every decision and deletion), input (every decision with the policy input it was made on).")
	fs.StringVar(&o.DocsBaseURL, "docs-base-url", o.DocsBaseURL, "Base URL of mpiguard's docs folder: each policy's denials end with a link to the section that explains them (a mirror's for an air-gapped cluster); empty for no links.")
	fs.StringVar(&o.Namespace, "policy-namespace", o.Namespace, "Namespace of the policy ConfigMaps (labels mpiguard.io/policy=rego|parameters); default: $POD_NAMESPACE.")
	fs.DurationVar(&o.EvalTimeout, "policy-eval-timeout", o.EvalTimeout, "Deadline of one evaluation of the policy set; a policy that runs past it fails the request closed.")
	fs.IntVar(&o.MaxUnconfirmedReservations, "max-unconfirmed-reservations", o.MaxUnconfirmedReservations, "Per namespace, how many quota reservations of admitted creates whose TrainJob has not appeared may be held; past it creates there are refused with 'retry' (negative: no cap).")
	fs.DurationVar(&o.ReservationGrace, "reservation-grace", o.ReservationGrace, "How long an admitted TrainJob's quota reservation holds before the TrainJob must exist; after it, a reservation whose job never appeared is released.")
}

func (o PolicyOptions) decisionLog() (io.Writer, error) {
	switch o.DecisionLog {
	case "":
		return nil, nil
	case "stdout":
		return os.Stdout, nil
	case "stderr":
		return os.Stderr, nil
	}
	f, err := os.OpenFile(o.DecisionLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the decision log: %w", err)
	}
	return f, nil
}

// setupPolicies builds the renderer and the policy engine (once per process)
// and serves the TrainJob webhooks with them; audit judges with the same.
// It returns the engine, whose parameters the follower reads too.
func setupPolicies(ctx context.Context, mgr ctrl.Manager, o PolicyOptions, ao audit.Options, ko kueuecheck.Options, np networkpolicies.Options) (*engine.Engine, error) {
	log, err := o.decisionLog()
	if err != nil {
		return nil, err
	}
	verbosity, err := engine.ParseVerbosity(o.DecisionLogVerbosity)
	if err != nil {
		return nil, err
	}
	pipeline.SetDocsBaseURL(o.DocsBaseURL)
	base, err := engine.DefaultPolicySet()
	if err != nil {
		return nil, fmt.Errorf("reading the embedded policies: %w", err)
	}
	eng, err := engine.New(ctx, base, engine.Options{DecisionLog: log, DecisionLogVerbosity: verbosity, Registerer: metrics.Registry, EvalTimeout: o.EvalTimeout})
	if err != nil {
		return nil, fmt.Errorf("loading the embedded policies: %w", err)
	}
	loader, err := reload.SetupWithManager(mgr, eng, base, o.Namespace)
	if err != nil {
		return nil, err
	}
	// Ready only once the policy ConfigMaps are loaded: before that, a fresh
	// pod would decide with the embedded policies alone.
	if err := mgr.AddReadyzCheck("policies", loader.Ready); err != nil {
		return nil, err
	}
	// Entries of admitted jobs are released by the elected leader once the
	// quota counts their pods (or they will never be charged).
	if err := retire.Setup(mgr, o.Namespace); err != nil {
		return nil, err
	}
	renderer, err := render.NewRenderer(ctx)
	if err != nil {
		return nil, err
	}
	// One pipeline: what the webhooks decide and what audit reports come
	// from the same code and share its cache of stored jobs' renders.
	p := pipeline.New(renderer, eng)
	if np.Enabled {
		// A create hears the NetworkPolicy template its job gets.
		p.DescribeNetworkPolicies(np)
	}
	// The cluster's nodes by shape (node-capacity policy), kept by one Node
	// informer for every decision; ready once every node was listed.
	nodes, nodesSynced, err := pipeline.WatchNodes(ctx, mgr.GetCache())
	if err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("nodes", func(*http.Request) error {
		if !nodesSynced() {
			return errors.New("the Node informer has not listed every node yet")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	ao.Nodes, ko.Nodes = nodes, nodes
	if err := setupAudit(mgr, p, loader, o.Namespace, ao); err != nil {
		return nil, err
	}
	// The webhook and the Kueue check reserve through one transaction: their
	// decisions in a namespace are batched together, each on the other's
	// last write.
	store := store.NewStore(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetClient(), o.Namespace)
	admitter := admit.NewAdmitter(store, pipeline.ClientCluster{Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), NodeIndex: nodes}, p,
		admit.AdmitterOptions{Grace: o.ReservationGrace, MaxUnconfirmed: o.MaxUnconfirmedReservations, Recorder: mgr.GetEventRecorder("mpiguard-quota")})
	if err := setupKueueCheck(mgr, p, admitter, ko); err != nil {
		return nil, err
	}
	if err := trainjob.SetupWithManager(ctx, mgr, trainjob.Options{Pipeline: p, Reservations: admitter, Nodes: nodes}); err != nil {
		return nil, err
	}
	// Deletions of TrainJobs and runtimes go to the same decision log.
	return eng, deletes.SetupWithManager(mgr, &deletes.Observer{Log: eng, Reservations: admitter})
}

// setupAudit runs audit on the elected leader with the webhooks' pipeline,
// re-auditing everything when the reloader loads a new policy set.
// Without the Report CRDs audit is off and mpiguard still serves admission.
func setupAudit(mgr ctrl.Manager, p *pipeline.Pipeline, loader *reload.Reconciler, ownNamespace string, o audit.Options) error {
	if !o.Enabled {
		return nil
	}
	// mpiguard's own namespace is never governed (config/webhook).
	o.SkipNamespaces = append(o.SkipNamespaces, ownNamespace)
	store := store.NewStore(mgr.GetClient(), mgr.GetAPIReader(), nil, ownNamespace)
	c, err := audit.SetupWithManager(mgr, p, store, o)
	if errors.Is(err, audit.ErrNoReportCRDs) {
		ctrl.Log.WithName("audit").Error(err, "audit disabled")
		return nil
	}
	if err != nil {
		return err
	}
	loader.Loaded = c.PolicyLoaded
	return nil
}

// setupKueueCheck answers mpiguard's Kueue AdmissionChecks on the elected
// leader with the webhooks' pipeline, reserving namespace quota in the same
// QuotaReservations the validating webhook writes. Without Kueue's CRDs it is
// off and mpiguard still serves admission.
func setupKueueCheck(mgr ctrl.Manager, p *pipeline.Pipeline, admitter *admit.Admitter, ko kueuecheck.Options) error {
	if !ko.Enabled {
		return nil
	}
	err := kueuecheck.SetupWithManager(mgr, p, admitter, ko)
	if errors.Is(err, kueuecheck.ErrNoKueue) {
		ctrl.Log.WithName("kueue-admission-check").Info(err.Error())
		return nil
	}
	return err
}
