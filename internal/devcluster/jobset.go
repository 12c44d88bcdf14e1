package devcluster

import (
	"context"
	"fmt"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	jobsetcontrollers "sigs.k8s.io/jobset/pkg/controllers"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app/scheme"
)

// StartJobSetController runs JobSet's own controller, from the pinned
// module, as jobset-controller-manager registers it, for the given
// namespaces only, until stop is called. A JobSet there then really becomes
// Jobs (and its headless Service); with Options.KubeControllers including
// "job", the Jobs become pods, or FailedCreate events when the apiserver
// refuses them.
//
// Namespaced, because other specs of a suite play the JobSet, Job and
// kubelet controllers themselves (creating pods from the JobSet's templates)
// and would find a real controller's pods beside their own.
//
// JobSet's webhooks do not run: its defaults are not applied, so the JobSet
// (its runtime's template) must set what the webhook would default, the
// pods' restartPolicy above all (Jobs require OnFailure or Never).
func (e *Env) StartJobSetController(ctx context.Context, namespaces ...string) (stop func() error, err error) {
	if len(namespaces) == 0 {
		return nil, fmt.Errorf("StartJobSetController: no namespace")
	}
	byNamespace := map[string]cache.Config{}
	for _, ns := range namespaces {
		byNamespace[ns] = cache.Config{}
	}
	return e.startJobSetController(ctx, cache.Options{DefaultNamespaces: byNamespace})
}

// startJobSetController runs JobSet's controller on objects its cache
// holds: those of some namespaces, or all (Options.Workloads).
func (e *Env) startJobSetController(ctx context.Context, cached cache.Options) (stop func() error, err error) {
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cached,
		// Controller names are global to the binary; specs may start it again.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the JobSet controller's manager: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	if err := jobsetcontrollers.SetupJobSetIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		cancel()
		return nil, fmt.Errorf("JobSet's indexes: %w", err)
	}
	r := jobsetcontrollers.NewJobSetReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorder("jobset"))
	if err := r.SetupWithManager(mgr); err != nil {
		cancel()
		return nil, fmt.Errorf("setting up the JobSet controller: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		return <-done
	}, nil
}
