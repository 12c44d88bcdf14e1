package app

import (
	"context"
	"crypto/tls"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	quotav1alpha1 "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reload"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app/scheme"
)

// NewManager builds the controller-runtime manager with mpiguard's scheme, the
// TLS webhook server (certificates hot-reloaded by controller-runtime's certwatcher),
// metrics, probes and optional leader election.
func NewManager(cfg *rest.Config, o ServeOptions) (ctrl.Manager, error) {
	tlsOpts := webhookTLSOptions(o.EnableHTTP2)
	if o.ClientCA != "" {
		opt, err := clientAuthTLSOption(o.ClientCA, o.ClientCertNames)
		if err != nil {
			return nil, err
		}
		tlsOpts = append(tlsOpts, opt)
	} else if len(o.ClientCertNames) > 0 {
		return nil, fmt.Errorf("--client-cert-names needs --client-ca")
	}
	metrics, err := metricsOptions(o)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme.New(),
		Controller: config.Controller{SkipNameValidation: optional(o.SkipControllerNameValidation)},
		Cache:      cacheOptions(o.Components.Policies.Namespace),
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:     o.WebhookHost,
			Port:     o.WebhookPort,
			CertDir:  o.CertDir,
			CertName: o.CertName,
			KeyName:  o.KeyName,
			TLSOpts:  tlsOpts,
		}),
		Metrics:                       metrics,
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNS,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 optional(o.RenewDeadline),
		RetryPeriod:                   optional(o.RetryPeriod),
		LeaderElectionReleaseOnCancel: o.LeaderElectionReleaseOnCancel,
		GracefulShutdownTimeout:       &o.GracefulShutdownTime,
		// Webhooks must answer on every mpiguard pod, including non-leaders; only
		// reconcilers wait for the lease (controller-runtime's default for webhooks).
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	// Ready only once the webhook server listens, so the Service never routes an
	// AdmissionReview to a pod that cannot answer it.
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return nil, err
	}
	// ...and only once the caches the webhooks decide with are synced
	// (readiness.go); setupPolicies adds the policy ConfigMaps' first load.
	if o.Components.TrainJobWebhooks {
		if err := addCacheReadiness(mgr); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// optional points to v unless it is the zero value: nil leaves the setting to
// controller-runtime's default.
func optional[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// webhookTLSOptions offers only HTTP/1.1 in TLS's protocol negotiation unless
// HTTP/2 is enabled: controller-runtime offers "h2" by default, and the
// apiserver takes it when offered.
func webhookTLSOptions(enableHTTP2 bool) []func(*tls.Config) {
	if enableHTTP2 {
		return nil
	}
	return []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
}

// Serve builds the manager, sets up every component and runs until ctx ends.
func Serve(ctx context.Context, cfg *rest.Config, o ServeOptions) error {
	log := ctrl.Log.WithName("serve")
	mgr, err := NewManager(cfg, o)
	if err != nil {
		return err
	}
	if err := Setup(ctx, mgr, o.Components); err != nil {
		return fmt.Errorf("setting up components: %w", err)
	}
	log.Info("starting mpiguard", "webhookPort", o.WebhookPort, "metrics", o.MetricsAddr, "probes", o.ProbeAddr)
	return mgr.Start(ctx)
}

// cacheOptions keeps the pod informer to pods of JobSets: quota decisions
// count a pending TrainJob's pods that already exist, and caching every pod
// of a large cluster would cost memory for nothing.
func cacheOptions(ownNamespace string) cache.Options {
	hasJobSet, err := labels.NewRequirement(jobsetv1alpha2.JobSetNameKey, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant requirement: cannot fail
	}
	isPolicy, err := labels.NewRequirement(reload.LabelPolicy, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return cache.Options{
		// managedFields are a large share of every object and nothing in
		// mpiguard reads them from the cache (server-side apply works them
		// out on the server): drop them from every informer's copy.
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.NewSelector().Add(*hasJobSet)},
			// Only policy ConfigMaps are watched (internal/reload), and only in
			// mpiguard's own namespace: a cluster-wide informer would let any
			// tenant fill mpiguard's memory with labelled ConfigMaps (and would
			// need list/watch on every ConfigMap of the cluster).
			&corev1.ConfigMap{}: {
				Namespaces: map[string]cache.Config{ownNamespace: {}},
				Label:      labels.NewSelector().Add(*isPolicy),
			},
			// Nodes are read for their shapes only (internal/capacity):
			// the rest of each Node is dropped from the cache.
			&corev1.Node{}: {Transform: pipeline.TrimNode},
			// QuotaReservations live in mpiguard's own namespace only.
			&quotav1alpha1.QuotaReservation{}: {Namespaces: map[string]cache.Config{ownNamespace: {}}},
		}}
}
