package publisher

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics are registered on controller-runtime's registry, so they are served on
// the manager's /metrics endpoint.
var (
	appliesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mpiguard_runtime_publisher_applies_total",
		Help: "Server-side applies of curated ClusterTrainingRuntimes, by runtime and result (success, error).",
	}, []string{"runtime", "result"})
	repairsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mpiguard_runtime_publisher_repairs_total",
		Help: "Curated ClusterTrainingRuntimes restored after someone else changed them, by runtime and cause (deleted, edited).",
	}, []string{"runtime", "cause"})
	publishedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mpiguard_runtime_publisher_in_sync",
		Help: "1 when the curated ClusterTrainingRuntime in the cluster matches the binary's copy, 0 otherwise.",
	}, []string{"runtime"})
)

func init() {
	metrics.Registry.MustRegister(appliesTotal, repairsTotal, publishedGauge)
}
