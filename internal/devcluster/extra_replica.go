package devcluster

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
	if len(e.Replicas) <= 1 {
		return nil, fmt.Errorf("StartExtraReplica needs an Env with Options.Replicas > 1: a second manager without leader election would run every reconciler twice")
	}
	host := e.Testenv.WebhookInstallOptions.LocalServingHost
	ports, err := freeLoopbackPorts(host, 2, e.Testenv.WebhookInstallOptions.LocalServingPort)
	if err != nil {
		return nil, fmt.Errorf("finding ports for an extra replica: %w", err)
	}
	rc := e.electingReplica(len(e.Replicas)+e.extraReplicas, ports[0])
	rc.probeAddr = net.JoinHostPort(host, strconv.Itoa(ports[1]))
	e.extraReplicas++
	return e.startReplica(ctx, rc)
}
