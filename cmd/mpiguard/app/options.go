// Package app builds the mpiguard manager: the webhook server, probes, metrics and
// every controller and webhook. `mpiguard serve`, `make run` and the envtest
// integration suites all go through Setup, so tests exercise the wiring that ships.
package app

import (
	"flag"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// ServeOptions configures `mpiguard serve`.
type ServeOptions struct {
	// WebhookPort and CertDir: the webhook server's TLS listener; tls.crt/tls.key in
	// CertDir are watched and reloaded without a restart (cert-manager rotates them).
	WebhookHost string
	WebhookPort int
	CertDir     string
	CertName    string
	KeyName     string
	// EnableHTTP2 lets the webhook server negotiate HTTP/2. Off by default, as
	// kubebuilder scaffolds it: HTTP/2 exposes the server to the HTTP/2
	// rapid-reset and stream-cancellation attacks (CVE-2023-44487,
	// CVE-2023-39325), and the kube-apiserver, which would otherwise pick
	// HTTP/2, costs the webhook more CPU per review over it
	// (BenchmarkWebhookHTTPS). The apiserver falls back to HTTP/1.1 by itself.
	EnableHTTP2 bool
	// ClientCA, when set, is a PEM file of the CA that signs the
	// kube-apiserver's webhook client certificate: the webhook server then
	// refuses every caller without a certificate it signed (clientauth.go).
	ClientCA string
	// ClientCertNames, with ClientCA, also requires the client certificate's
	// common name or a DNS name to be one of them.
	ClientCertNames []string

	// MetricsAddr is where /metrics is served ("0": not at all). With
	// SecureMetrics (the default) it is HTTPS, and every scrape is
	// authenticated and authorized by the kube-apiserver (metrics.go);
	// MetricsCertDir holds tls.crt/tls.key, else the certificate is
	// self-signed at start-up.
	MetricsAddr    string
	SecureMetrics  bool
	MetricsCertDir string
	ProbeAddr      string

	LeaderElect          bool
	LeaderElectionID     string
	LeaderElectionNS     string
	LeaseDuration        time.Duration
	GracefulShutdownTime time.Duration
	// RenewDeadline and RetryPeriod tune leader election; zero keeps
	// controller-runtime's defaults (10s, 2s). Tests that run several replicas
	// shorten them so a lease changes hands in a second, not in 15.
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// LeaderElectionReleaseOnCancel gives the lease up when the manager stops,
	// so another replica takes over at its next retry instead of after
	// LeaseDuration. Off, as today: the process must exit right after its
	// manager stops, which `mpiguard serve` does.
	LeaderElectionReleaseOnCancel bool
	// SkipControllerNameValidation lets a second manager in the same process
	// register controllers under the names the first one used (controller-runtime
	// keeps the names of one process unique). Only tests that run several
	// replicas in one process set it; off, duplicate names are caught.
	SkipControllerNameValidation bool

	Components Options
	Log        zap.Options
}

// DefaultServeOptions returns the defaults that the Deployment in config/ relies on.
func DefaultServeOptions() ServeOptions {
	return ServeOptions{
		WebhookPort:          9443,
		CertDir:              "/tmp/k8s-webhook-server/serving-certs",
		CertName:             "tls.crt",
		KeyName:              "tls.key",
		MetricsAddr:          ":8443",
		SecureMetrics:        true,
		ProbeAddr:            ":8081",
		LeaderElectionID:     "mpiguard.mpiguard.io",
		LeaseDuration:        15 * time.Second,
		GracefulShutdownTime: 30 * time.Second,
		Components:           DefaultOptions(),
		Log:                  zap.Options{Development: false},
	}
}

// AddFlags binds the options to a flag set.
func (o *ServeOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.WebhookHost, "webhook-host", o.WebhookHost, "Address the webhook server binds to (empty: all interfaces).")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "Port of the webhook server (TLS).")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "Folder with the webhook serving certificate; reloaded on change.")
	fs.StringVar(&o.CertName, "cert-name", o.CertName, "Certificate file name in --cert-dir.")
	fs.StringVar(&o.KeyName, "key-name", o.KeyName, "Private key file name in --cert-dir.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2, "Let the webhook server negotiate HTTP/2 (off: HTTP/1.1 only; see CVE-2023-44487).")
	fs.StringVar(&o.ClientCA, "client-ca", o.ClientCA, "PEM CA file: the webhook server requires a client certificate it signs (the kube-apiserver's, set in its AdmissionConfiguration). Empty: any TLS client is served.")
	fs.StringSliceVar(&o.ClientCertNames, "client-cert-names", o.ClientCertNames, "With --client-ca: the client certificate's common name or a DNS name must be one of these.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "Address of the Prometheus metrics endpoint ('0' disables it).")
	fs.BoolVar(&o.SecureMetrics, "metrics-secure", o.SecureMetrics, "Serve metrics over HTTPS to callers the kube-apiserver authenticates and authorizes (get on /metrics); false: plain HTTP, no authentication.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "Folder with the metrics serving certificate (tls.crt, tls.key; reloaded on change). Empty: a self-signed certificate made at start-up.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Address of the /healthz and /readyz probes.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader for the controllers (webhooks are served by every mpiguard pod).")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader election Lease.")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", o.LeaderElectionNS, "Namespace of the Lease (default: the pod's namespace).")
	fs.DurationVar(&o.GracefulShutdownTime, "graceful-shutdown-timeout", o.GracefulShutdownTime, "How long to wait for runnables to stop.")
	o.Components.AddFlags(fs)
	gfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.Log.BindFlags(gfs)
	fs.AddGoFlagSet(gfs)
}
