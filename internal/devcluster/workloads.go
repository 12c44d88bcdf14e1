package devcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// Workloads makes pods really run in the local cluster (Options.Workloads).
type Workloads struct {
	// Nodes is how many fake nodes KWOK runs (default 4), GPUsPerNode the
	// nvidia.com/gpu each has (default 8).
	Nodes, GPUsPerNode int
}

// workloadControllers are kube-controller-manager's controllers a workload
// needs: Jobs create pods; ResourceQuotas count them (status.used) and free
// what finished pods held; the garbage collector deletes what a deleted
// object owned; a deleted namespace is emptied and goes.
var workloadControllers = []string{"job", "resourcequota", "garbagecollector", "namespace"}

// startWorkloads starts what Options.Workloads asks for, but the Trainer,
// which runs in mpiguard's manager (withTrainer): kube-controller-manager,
// kube-scheduler, KWOK and its nodes, and JobSet's controller in every
// namespace.
func (e *Env) startWorkloads(ctx context.Context, w *Workloads, controllers []string) error {
	for _, c := range workloadControllers {
		if !slices.Contains(controllers, c) {
			controllers = append(controllers, c)
		}
	}
	if err := e.startControllerManager(ctx, controllers); err != nil {
		return err
	}
	if err := e.startScheduler(ctx); err != nil {
		return err
	}
	if err := e.startKWOK(ctx); err != nil {
		return err
	}
	nodes, gpus := w.Nodes, w.GPUsPerNode
	if nodes <= 0 {
		nodes = 4
	}
	if gpus <= 0 {
		gpus = 8
	}
	if err := e.createKWOKNodes(ctx, nodes, gpus); err != nil {
		return err
	}
	stop, err := e.startJobSetController(ctx, cache.Options{})
	if err != nil {
		return err
	}
	e.stopJobSet = stop
	return nil
}

// withTrainer runs the Trainer's controllers (TrainerController) in
// mpiguard's manager before setup, if any.
func withTrainer(setup func(context.Context, ctrl.Manager) error) func(context.Context, ctrl.Manager) error {
	return func(ctx context.Context, mgr ctrl.Manager) error {
		if err := TrainerController(ctx, mgr); err != nil {
			return err
		}
		if setup == nil {
			return nil
		}
		return setup(ctx, mgr)
	}
}

// stopWorkloadControllers stops JobSet's controller, if it runs.
func (e *Env) stopWorkloadControllers() error {
	if e.stopJobSet == nil {
		return nil
	}
	err := e.stopJobSet()
	e.stopJobSet = nil
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("JobSet controller: %w", err)
	}
	return nil
}
