package framework

import (
	"context"
	"fmt"
	"net"
	"strconv"
)

// StartExtraReplica starts one more mpiguard manager, as a new pod of a
// rollout: set up like the Env's replicas (leader election on when they have
// it, so it joins as a follower), but on its own webhook port behind no proxy
// (the apiserver never calls it; a test posts to Addr itself) and with its
// probes served on ProbeAddr. It returns at once, without waiting for it to
// be ready: that is for the test to watch. The caller stops it (Stop).
func (e *Env) StartExtraReplica(ctx context.Context) (*Replica, error) {
	host := e.Testenv.WebhookInstallOptions.LocalServingHost
	ports, err := freeLoopbackPorts(host, 2, e.Testenv.WebhookInstallOptions.LocalServingPort)
	if err != nil {
		return nil, fmt.Errorf("finding ports for an extra replica: %w", err)
	}
	index := len(e.Replicas)
	rc := replicaConfig{
		index: index, host: host, port: ports[0],
		decisionLog: fmt.Sprintf("decisions-%d.jsonl", index),
		leaderElect: len(e.Replicas) > 1,
		probeAddr:   net.JoinHostPort(host, strconv.Itoa(ports[1])),
	}
	if !rc.leaderElect {
		return nil, fmt.Errorf("StartExtraReplica needs an Env with Options.Replicas > 1: a second manager without leader election would run every reconciler twice")
	}
	r, err := e.startReplica(ctx, e.opts, e.components, rc)
	if err != nil {
		return nil, err
	}
	r.ProbeAddr = rc.probeAddr
	return r, nil
}
