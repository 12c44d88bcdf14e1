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

// initSeries creates, at zero, the series of every curated runtime the
// publisher keeps: rate() and increase() miss the first event of a series
// born at 1 (a runtime's first repair, MpiguardCuratedRuntimeOutOfSync's
// neighbour on the dashboard), and panels show zeros instead of nothing.
func initSeries(runtimes []string) {
	for _, name := range runtimes {
		for _, cause := range []string{"deleted", "edited"} {
			repairsTotal.WithLabelValues(name, cause)
		}
		for _, result := range []string{"success", "error"} {
			appliesTotal.WithLabelValues(name, result)
		}
	}
}
