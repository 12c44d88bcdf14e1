package prometheus_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	// Everything `mpiguard serve` registers on controller-runtime's registry
	// when imported: each package's collectors, controller-runtime's webhook
	// and controller metrics.
	_ "github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/test/framework"
)

// TestMonitoringReadsRegisteredMetrics: every mpiguard or controller-runtime
// metric an alert or a dashboard panel reads is registered by the manager's
// code under that name, so a renamed metric fails here rather than silencing
// its alert or emptying its panel. (Registered, not scraped: a labelled series
// appears in /metrics only once observed; test/integration/admission's
// scrape spec reads a running manager's /metrics.) The kube-apiserver's
// apiserver_admission_webhook_* and kube-state-metrics' kube_resourcequota
// are other components' stable metrics.
func TestMonitoringReadsRegisteredMetrics(t *testing.T) {
	// The engine registers its collectors when it is made.
	if _, err := engine.NewDefault(context.Background(), engine.Options{Registerer: metrics.Registry}); err != nil {
		t.Fatal(err)
	}
	read, err := framework.MonitoredMetrics()
	if err != nil {
		t.Fatal(err)
	}
	var own int
	for name, readers := range read {
		if !framework.ServedByManager(name) {
			continue
		}
		own++
		if !registered(name) && !registered(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")) {
			t.Errorf("%s reads %s, which mpiguard does not register", strings.Join(readers, ", "), name)
		}
	}
	if own == 0 {
		t.Fatal("the alerts and dashboard read no mpiguard or controller-runtime metric")
	}
}

// registered says whether a collector of metric name is registered on
// controller-runtime's registry: registering another under the same name is
// refused then.
func registered(name string) bool {
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe of config/prometheus/metrics_test.go"})
	err := metrics.Registry.Register(probe)
	if err == nil {
		metrics.Registry.Unregister(probe)
		return false
	}
	var already prometheus.AlreadyRegisteredError
	return errors.As(err, &already) || strings.Contains(err.Error(), "same fully-qualified name")
}
