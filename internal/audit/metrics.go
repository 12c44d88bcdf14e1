package audit

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// violations counts, per policy and namespace, the objects a policy
	// denies today ("" namespace: ClusterTrainingRuntimes). A namespace's
	// series are replaced whole on each of its audits and dropped with it.
	violations = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mpiguard_audit_violations",
		Help: "Objects (TrainJobs, runtimes) that a policy denies today, per policy and namespace (empty: cluster-scoped runtimes), as of the last audit.",
	}, []string{"policy", "namespace"})
	lastRun = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mpiguard_audit_last_run_timestamp_seconds",
		Help: "When the last audit (of a namespace or of the cluster-scoped runtimes) finished, in seconds since the epoch.",
	})
	duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mpiguard_audit_duration_seconds",
		Help:    "Time one audit took, by scope (namespace: every TrainJob and TrainingRuntime of one namespace; cluster: the ClusterTrainingRuntimes) and outcome (success, error).",
		Buckets: []float64{1e-3, 5e-3, 10e-3, 50e-3, 100e-3, 500e-3, 1, 5, 10, 30},
	}, []string{"scope", "outcome"})
)

func init() { metrics.Registry.MustRegister(violations, lastRun, duration) }

// observe records one audit: its violations per policy replace the scope's
// previous ones.
func observe(ns string, rs []Result, took time.Duration, err error, now time.Time) {
	scope, outcome := "namespace", "success"
	if ns == "" {
		scope = "cluster"
	}
	if err != nil {
		outcome = "error"
	}
	duration.WithLabelValues(scope, outcome).Observe(took.Seconds())
	if err != nil {
		return
	}
	lastRun.Set(float64(now.UnixNano()) / 1e9)
	counts := map[string]int{}
	for _, r := range rs {
		if r.Violates() {
			counts[r.Policy]++
		}
	}
	forget(ns)
	for policy, n := range counts {
		violations.WithLabelValues(policy, ns).Set(float64(n))
	}
}

// forget drops a namespace's violation series (the namespace is gone).
func forget(ns string) {
	violations.DeletePartialMatch(prometheus.Labels{"namespace": ns})
}
