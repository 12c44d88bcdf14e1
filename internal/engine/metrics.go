package engine

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the engine's Prometheus collectors.
type metrics struct {
	decisions *prometheus.CounterVec
	denials   *prometheus.CounterVec
	latency   prometheus.Histogram
	reloads   *prometheus.CounterVec
	setInfo   *prometheus.GaugeVec
}

// Outcomes of one policy in one decision (label "outcome"); policy "all" counts
// whole decisions as allowed, denied or ungoverned (not an MPI TrainJob).
const (
	outcomePass       = "pass"
	outcomeDeny       = "deny"
	outcomeWarn       = "warn"
	outcomeDryRun     = "dryrun"
	outcomeExempt     = "exempt"
	outcomeAllowed    = "allowed"
	outcomeDenied     = "denied"
	outcomeUngoverned = "ungoverned"
	outcomeError      = "error"
	policyAll         = "all"
)

func newMetrics() *metrics {
	return &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mpiguard_policy_decisions_total",
			Help: "Admission decisions by policy and outcome (policy=\"all\": whole decisions allowed, denied, ungoverned or error).",
		}, []string{"policy", "outcome"}),
		// decisions has no namespace label (policies x outcomes x namespaces
		// would be most of the series); denials, the one outcome someone
		// follows up per team, has it.
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mpiguard_policy_denials_total",
			Help: "TrainJob requests a policy denied (enforcement deny), by policy and the TrainJob's namespace.",
		}, []string{"policy", "namespace"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mpiguard_policy_evaluation_seconds",
			Help:    "Time to evaluate every policy for one TrainJob (input build, Rego, results).",
			Buckets: []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 50e-3},
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mpiguard_policy_reloads_total",
			Help: "Policy set loads by result (success, failure); a failed load keeps the last good set serving.",
		}, []string{"result"}),
		setInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mpiguard_policy_set_info",
			Help: "The policy set serving decisions (value 1, its version as a label).",
		}, []string{"version"}),
	}
}

// register registers the collectors; when another engine in the process
// (a second manager in tests) registered them already, this engine reports
// through those.
func (m *metrics) register(r prometheus.Registerer) error {
	var err error
	if m.decisions, err = registerOrReuse(r, m.decisions); err != nil {
		return err
	}
	if m.denials, err = registerOrReuse(r, m.denials); err != nil {
		return err
	}
	if m.latency, err = registerOrReuse(r, m.latency); err != nil {
		return err
	}
	if m.reloads, err = registerOrReuse(r, m.reloads); err != nil {
		return err
	}
	m.setInfo, err = registerOrReuse(r, m.setInfo)
	return err
}

func registerOrReuse[C prometheus.Collector](r prometheus.Registerer, c C) (C, error) {
	err := r.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

func (m *metrics) serving(version string) {
	m.setInfo.Reset()
	m.setInfo.WithLabelValues(version).Set(1)
}
