package devcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
)

// RestartManagers stops every mpiguard replica and starts them again on the
// same webhook addresses, set up with components instead: for settings that
// `mpiguard serve` reads only from its flags at start-up, as a rollout of the
// Deployment with new arguments would. It returns once they serve and one
// leads. Env.Manager is the new replica 0's manager.
func (e *Env) RestartManagers(ctx context.Context, components app.Options) error {
	if len(e.Replicas) == 0 {
		return errors.New("RestartManagers: the Env runs no mpiguard manager (Options.NoManager)")
	}
	old := e.Replicas
	if errs := e.stopReplicas(); errors.Join(errs...) != nil {
		return fmt.Errorf("RestartManagers: stopping the replicas: %w", errors.Join(errs...))
	}
	e.components = components
	e.Replicas = nil
	for i, r := range old {
		host, portText, err := net.SplitHostPort(r.Addr)
		if err != nil {
			return err
		}
		port, err := strconv.Atoi(portText)
		if err != nil {
			return err
		}
		rc := replicaConfig{index: i, host: host, port: port, decisionLog: "decisions.jsonl"}
		if len(old) > 1 {
			rc = e.electingReplica(i, port)
		}
		rc.restarted = true
		// The replicas outlive the caller's context (a spec's, which ends
		// with the spec): Env.Stop ends them, as it ends those Start made.
		nr, err := e.startReplica(context.WithoutCancel(ctx), rc)
		if err != nil {
			return err
		}
		e.Replicas = append(e.Replicas, nr)
	}
	e.Manager = e.Replicas[0].Manager
	for _, r := range e.Replicas {
		if err := r.waitReady(ctx); err != nil {
			return err
		}
	}
	return waitLeader(ctx, e.Replicas)
}
