package mpi

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// network is one node's pod network: a network namespace holding a bridge
// (the node's side, from which the "kubelet" probes) and one network namespace
// per pod, joined to the bridge by a veth pair. Nothing is added to this
// machine's own network namespace.
type network struct {
	node string
	pods []string
}

// netnsCount makes network namespace names unique within this test binary;
// the process ID makes them unique on the machine.
var netnsCount atomic.Int64

const (
	bridge     = "br0"
	subnet     = "10.244.0"
	bridgeAddr = subnet + ".1"
)

// newNetwork creates the node's namespace and bridge; t.Cleanup removes every
// namespace of the network, and with them their interfaces.
func newNetwork(t *testing.T) *network {
	t.Helper()
	n := &network{node: netnsName()}
	t.Cleanup(n.remove)
	ip(t, "netns", "add", n.node)
	ip(t, "-n", n.node, "link", "set", "lo", "up")
	ip(t, "-n", n.node, "link", "add", bridge, "type", "bridge")
	ip(t, "-n", n.node, "addr", "add", bridgeAddr+"/24", "dev", bridge)
	ip(t, "-n", n.node, "link", "set", bridge, "up")
	return n
}

// addPod creates pod number i's namespace, with eth0 on the bridge, and
// returns the namespace and the pod's IP.
func (n *network) addPod(t *testing.T, i int) (netns, addr string) {
	t.Helper()
	netns, addr = netnsName(), fmt.Sprintf("%s.%d", subnet, i+2)
	n.pods = append(n.pods, netns)
	veth := fmt.Sprintf("veth%d", i)
	ip(t, "netns", "add", netns)
	ip(t, "-n", n.node, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
	ip(t, "-n", n.node, "link", "set", veth, "master", bridge, "up")
	ip(t, "-n", netns, "addr", "add", addr+"/24", "dev", "eth0")
	ip(t, "-n", netns, "link", "set", "eth0", "up")
	ip(t, "-n", netns, "link", "set", "lo", "up")
	return netns, addr
}

// remove kills what still runs in the pods' namespaces (processes this test
// started: sshd, its sessions, the ranks) and deletes the namespaces.
func (n *network) remove() {
	for _, ns := range append(n.pods, n.node) {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		for _, f := range strings.Fields(string(out)) {
			var pid int
			if _, err := fmt.Sscan(f, &pid); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
}

func netnsName() string {
	return fmt.Sprintf("mpiguard-%d-%d", os.Getpid(), netnsCount.Add(1))
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
