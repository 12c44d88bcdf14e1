package smoketest

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// verdicts counts finished RuntimeTests, so that an alert
// (config/prometheus/rule.yaml, MpiguardRuntimeTestFailed) sees a curated or
// custom runtime stop working on the cluster.
var verdicts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mpiguard_runtimetest_verdicts_total",
	Help: "Finished RuntimeTests by runtime, result (succeeded, failed) and reason (the Succeeded condition's).",
}, []string{"runtime", "result", "reason"})

func init() { metrics.Registry.MustRegister(verdicts) }

func observeVerdict(runtime string, succeeded bool, reason string) {
	result := "failed"
	if succeeded {
		result = "succeeded"
	}
	verdicts.WithLabelValues(runtime, result, reason).Inc()
}
