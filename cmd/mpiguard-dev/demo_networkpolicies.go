package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// showNetworkPolicies submits an MPI TrainJob, prints the NetworkPolicy mpiguard
// writes for it, deletes that policy and shows it restored.
func showNetworkPolicies(ctx context.Context, env *framework.Env) error {
	ns, err := env.NewNamespace(ctx, map[string]string{"mpiguard.io/demo": "true"})
	if err != nil {
		return err
	}
	rt := fixtures.MPIRuntime("demo-openmpi-netpol").Cluster()
	if err := env.Client.Create(ctx, rt); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	job := fixtures.TrainJob(ns.Name, "pi", rt.Name).NumNodes(2).Obj()
	if err := env.Client.Create(ctx, job); err != nil {
		return fmt.Errorf("creating TrainJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	say("MPI TrainJob %s/pi submitted; the NetworkPolicy mpiguard applied for it:", ns.Name)
	p, err := waitForPolicy(ctx, env, ns.Name, "pi", "")
	if err != nil {
		return err
	}
	printPolicy(p)

	say("deleting NetworkPolicy %s/pi (drift): mpiguard restores it", ns.Name)
	if err := env.Client.Delete(ctx, p); err != nil {
		return err
	}
	restored, err := waitForPolicy(ctx, env, ns.Name, "pi", p.UID)
	if err != nil {
		return err
	}
	fmt.Printf("    restored as a new object (uid %s, was %s)\n", restored.UID, p.UID)
	return nil
}

// waitForPolicy waits for the policy to exist with a UID other than notUID.
func waitForPolicy(ctx context.Context, env *framework.Env, ns, name string, notUID types.UID) (*networkingv1.NetworkPolicy, error) {
	var p networkingv1.NetworkPolicy
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && p.UID != notUID, err
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for NetworkPolicy %s/%s: %w", ns, name, err)
	}
	return &p, nil
}

func printPolicy(p *networkingv1.NetworkPolicy) {
	shown := p.DeepCopy()
	shown.ManagedFields, shown.ResourceVersion, shown.CreationTimestamp = nil, "", metav1.Time{}
	shown.APIVersion, shown.Kind = "networking.k8s.io/v1", "NetworkPolicy"
	out, err := yaml.Marshal(shown)
	if err != nil {
		fmt.Printf("    (cannot print: %v)\n", err)
		return
	}
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if strings.Contains(line, "creationTimestamp: null") {
			continue
		}
		fmt.Println("    " + line)
	}
}
