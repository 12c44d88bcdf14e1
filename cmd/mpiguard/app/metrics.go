package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Names of the metrics serving certificate in --metrics-cert-dir
// (controller-runtime's defaults, as cert-manager writes them).
const (
	metricsCertName = "tls.crt"
	metricsKeyName  = "tls.key"
)

// metricsOptions serves /metrics as kubebuilder scaffolds it today: over
// HTTPS, and only to callers the kube-apiserver authenticates (TokenReview of
// the bearer token) and authorizes (SubjectAccessReview: verb get on the
// non-resource URL /metrics, granted by config/rbac's metrics-reader
// ClusterRole). Metrics name namespaces, runtimes and policy versions, and an
// open endpoint lets anyone who reaches the pod load it; mpiguard's own
// identity needs tokenreviews and subjectaccessreviews create for this
// (config/rbac/metrics_auth_role.yaml).
//
// Without --metrics-cert-dir the server presents a self-signed certificate
// that controller-runtime generates at start-up (encrypted, not verifiable:
// Prometheus skips verification, config/prometheus). --metrics-secure=false
// serves plain, unauthenticated HTTP, for local runs only.
func metricsOptions(o ServeOptions) (metricsserver.Options, error) {
	m := metricsserver.Options{BindAddress: o.MetricsAddr}
	if !o.SecureMetrics {
		if o.MetricsCertDir != "" {
			return m, errors.New("--metrics-cert-dir needs --metrics-secure (plain HTTP has no certificate)")
		}
		return m, nil
	}
	m.SecureServing = true
	m.FilterProvider = filters.WithAuthenticationAndAuthorization
	// The same protocol choice as the webhook server: HTTP/1.1 only unless
	// --enable-http2 (kubebuilder applies it to both servers).
	m.TLSOpts = webhookTLSOptions(o.EnableHTTP2)
	if o.MetricsCertDir != "" {
		// controller-runtime silently falls back to a self-signed certificate
		// when the files are missing; a configured folder without them is a
		// mistake worth failing for.
		for _, name := range []string{metricsCertName, metricsKeyName} {
			if _, err := os.Stat(filepath.Join(o.MetricsCertDir, name)); err != nil {
				return m, fmt.Errorf("--metrics-cert-dir %s: %w (it must hold %s and %s)", o.MetricsCertDir, err, metricsCertName, metricsKeyName)
			}
		}
		m.CertDir, m.CertName, m.KeyName = o.MetricsCertDir, metricsCertName, metricsKeyName
	}
	return m, nil
}
