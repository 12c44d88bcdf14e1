package prometheus_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	// Everything `mpiguard serve` registers on controller-runtime's registry
	// when imported: each package's collectors, controller-runtime's webhook
	// and controller metrics.
	_ "github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/policies/engine"
)

// metricName picks the series names out of an alert's expression: mpiguard's,
// controller-runtime's and the kube-apiserver's (the rest are PromQL
// functions and keywords, or Prometheus' own `up`).
var metricName = regexp.MustCompile(`\b(?:mpiguard|controller_runtime|apiserver)_[a-z0-9_]+\b`)

// TestAlertsReadRegisteredMetrics: every mpiguard or controller-runtime metric
// an alert reads is registered by the manager's code under that name, so a
// renamed metric fails here rather than silencing its alert. (Registered, not
// scraped: a labelled series appears in /metrics only once observed.) The
// kube-apiserver's apiserver_admission_webhook_* are Kubernetes' own, stable
// metrics.
func TestAlertsReadRegisteredMetrics(t *testing.T) {
	// The engine registers its collectors when it is made.
	if _, err := engine.NewDefault(context.Background(), engine.Options{Registerer: metrics.Registry}); err != nil {
		t.Fatal(err)
	}
	r, _ := readRule(t)
	var names []string
	for _, g := range r.Spec.Groups {
		for _, rl := range g.Rules {
			for _, n := range metricName.FindAllString(rl.Expr, -1) {
				if !strings.HasPrefix(n, "apiserver_") && !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("the alerts read no mpiguard or controller-runtime metric")
	}
	for _, name := range names {
		if !registered(name) && !registered(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")) {
			t.Errorf("an alert reads %s, which mpiguard does not register", name)
		}
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
