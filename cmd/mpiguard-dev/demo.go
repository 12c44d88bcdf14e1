package main

import (
	"context"
	"fmt"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// runDemo shows each part of mpiguard at work on the local control plane.
func runDemo(ctx context.Context, env *framework.Env) error {
	for _, step := range demoSteps {
		if err := step(ctx, env); err != nil {
			return err
		}
	}
	return nil
}

// demoSteps run in order; each part of mpiguard adds its own step.
var demoSteps = []func(context.Context, *framework.Env) error{
	showRuntimes,
	showAdmission,
	showNetworkPolicies,
}

// showRuntimes lists the ClusterTrainingRuntimes once the publisher has applied them.
func showRuntimes(ctx context.Context, env *framework.Env) error {
	var list trainer.ClusterTrainingRuntimeList
	seen := -1
	// Done once the count is non-zero and stopped growing between two polls.
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.List(ctx, &list); err != nil {
			return false, err
		}
		done := len(list.Items) > 0 && len(list.Items) == seen
		seen = len(list.Items)
		return done, nil
	})
	say("curated ClusterTrainingRuntimes published: %d", len(list.Items))
	for _, rt := range list.Items {
		fmt.Printf("    %-40s %s\n", rt.Name, rt.Labels["mpiguard.io/mpi-implementation"])
	}
	return nil
}

// showAdmission submits sample TrainJobs and prints each decision.
func showAdmission(ctx context.Context, env *framework.Env) error {
	ns, err := env.NewNamespace(ctx, map[string]string{"mpiguard.io/demo": "true"})
	if err != nil {
		return err
	}
	rt := fixtures.MPIRuntime("demo-openmpi").SlotsPerWorker(2).Cluster()
	if err := env.Client.Create(ctx, rt); err != nil {
		return err
	}
	say("submitting sample MPI TrainJobs to namespace %s", ns.Name)
	for _, job := range []*trainer.TrainJob{
		fixtures.TrainJob(ns.Name, "two-workers", rt.Name).NumNodes(2).Obj(),
		fixtures.TrainJob(ns.Name, "no-workers", rt.Name).NumNodes(0).Obj(),
	} {
		if err := env.Client.Create(ctx, job); err != nil {
			fmt.Printf("    DENIED  %s: %v\n", job.Name, err)
			continue
		}
		fmt.Printf("    ALLOWED %s\n", job.Name)
	}
	return nil
}
