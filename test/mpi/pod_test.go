package mpi

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pod is one rendered pod run as real processes: its own network, mount and
// UTS namespaces, the image's files laid over /etc and /home, its Secret and
// ConfigMap volumes bind-mounted where the pod spec mounts them, and its one
// container's command run as the user its security context says.
type pod struct {
	podSpec
	netns, addr string
	// img stands in for the container's image.
	img  image
	out  syncBuffer
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// podInit runs as root inside the pod's fresh mount and UTS namespaces (and
// its network namespace): it sets the hostname, lays the image layer over this
// machine's directories (overlayfs, upper layer on a tmpfs so any filesystem
// under the test's temporary folder will do), mounts the volumes, gives the
// pod its own /tmp, /var/tmp and /dev/shm (Open MPI keeps its session
// directory and shared memory there; last, as the test's files are in /tmp),
// and execs the
// container's command as the pod's user. Arguments: layer, scratch, mounts
// file, hostname, working directory, then the command line to exec.
const podInit = `set -eu
layer=$1 scratch=$2 mounts=$3
hostname "$4"
mount -t tmpfs -o mode=0755 mpiguard-pod "$scratch"
for top in $(ls "$layer"); do
  mkdir "$scratch/$top.upper" "$scratch/$top.work"
  cp -a "$layer/$top/." "$scratch/$top.upper/"
  mount -t overlay overlay -o "lowerdir=/$top,upperdir=$scratch/$top.upper,workdir=$scratch/$top.work" "/$top"
done
while read -r src dst; do
  mkdir -p "$dst"
  mount --bind "$src" "$dst"
  mount -o remount,bind,ro "$dst"
done < "$mounts"
for tmp in /tmp /var/tmp /dev/shm; do
  mount -t tmpfs -o mode=1777 mpiguard-pod "$tmp"
done
cd "$5"
shift 5
exec "$@"
`

// kubelet runs the pods of one rendered TrainJob on this machine.
type kubelet struct {
	t         *testing.T
	r         *rendered
	namespace string
	net       *network
	dir       string
	pods      []*pod
}

// newKubelet gives every pod of r its network namespace and address; nothing
// runs yet.
func newKubelet(t *testing.T, r *rendered, namespace string) *kubelet {
	t.Helper()
	k := &kubelet{t: t, r: r, namespace: namespace, net: newNetwork(t), dir: t.TempDir()}
	for i, ps := range r.pods {
		p := &pod{podSpec: ps, done: make(chan struct{})}
		p.netns, p.addr = k.net.addPod(t, i)
		k.pods = append(k.pods, p)
	}
	// Stop what still runs before the namespaces go (cleanups run last first).
	t.Cleanup(k.stop)
	return k
}

// hosts is pod p's /etc/hosts: the kubelet's lines for the pod itself, and a
// line per pod of the JobSet standing in for cluster DNS, where the headless
// Service (publishNotReadyAddresses) answers for hostname.subdomain through
// the pod's search path.
func (k *kubelet) hosts(p *pod) string {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	for _, q := range k.pods {
		fqdn := fmt.Sprintf("%s.%s.%s.svc.cluster.local", q.hostname, q.subdomain, k.namespace)
		if q == p {
			fmt.Fprintf(&b, "%s\t%s %s %s.%s\n", q.addr, fqdn, q.hostname, q.hostname, q.subdomain)
			continue
		}
		fmt.Fprintf(&b, "%s\t%s.%s %s\n", q.addr, q.hostname, q.subdomain, fqdn)
	}
	return b.String()
}

// start runs pod p's container. An error is what the kubelet would report
// instead of starting it (CreateContainerConfigError and the like).
func (k *kubelet) start(p *pod) error {
	t := k.t
	if len(p.spec.Containers) != 1 || len(p.spec.InitContainers) > 0 {
		t.Fatalf("pod %s: the test runs pods of exactly one container, this one has %d (and %d init containers)",
			p.hostname, len(p.spec.Containers), len(p.spec.InitContainers))
	}
	c := p.spec.Containers[0]
	img, ok := substituteFor(c.Image)
	if !ok {
		t.Fatalf("pod %s: the test has no stand-in for image %s (image_test.go)", p.hostname, c.Image)
	}
	p.img = img
	id, err := identityOf(p.spec, c, img)
	if err != nil {
		return fmt.Errorf("pod %s: %w", p.hostname, err)
	}
	dir := filepath.Join(k.dir, p.hostname)
	layer, scratch := filepath.Join(dir, "layer"), filepath.Join(dir, "scratch")
	must(t, os.MkdirAll(scratch, 0o700))
	img.writeLayer(t, layer, k.hosts(p))
	mounts, err := k.volumes(p, c, dir, id.fsGroup)
	if err != nil {
		return fmt.Errorf("pod %s: %w", p.hostname, err)
	}
	var lines []string
	for _, m := range mounts {
		// Lay the mount point's top directory over too: the mount point is
		// created there, never in this machine's own tree.
		top := strings.SplitN(strings.TrimPrefix(m.dst, "/"), "/", 2)[0]
		if top == m.dst[1:] || top == "tmp" || strings.HasPrefix(m.dst, "/var/tmp/") || strings.HasPrefix(m.dst, "/dev/") {
			t.Fatalf("pod %s: volume mount %s is a top-level directory or in /tmp, /var/tmp or /dev, which the test does not reproduce", p.hostname, m.dst)
		}
		must(t, os.MkdirAll(filepath.Join(layer, top), 0o755))
		lines = append(lines, m.src+" "+m.dst)
	}
	mountsFile := filepath.Join(dir, "mounts")
	must(t, os.WriteFile(mountsFile, []byte(strings.Join(lines, "\n")+"\n"), 0o644))

	workDir := c.WorkingDir
	if workDir == "" {
		workDir = img.workingDir
	}
	argv := []string{"ip", "netns", "exec", p.netns, "unshare", "--mount", "--uts", "--propagation", "private", "--",
		"sh", "-c", podInit, "pod-init", layer, scratch, mountsFile, p.hostname, workDir}
	argv = append(argv, id.setpriv()...)
	argv = append(argv, "env", "-i")
	env, err := containerEnv(p, c, id)
	if err != nil {
		return fmt.Errorf("pod %s: %w", p.hostname, err)
	}
	argv = append(argv, env...)
	argv = append(argv, c.Command...)
	argv = append(argv, c.Args...)
	if len(c.Command) == 0 {
		t.Fatalf("pod %s: container %s has no command; the image's entrypoint is not reproduced", p.hostname, c.Name)
	}

	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("pod %s: %v", p.hostname, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return nil
}

// exited reports whether the pod's container has exited.
func (p *pod) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for the container to exit and returns its error.
func (p *pod) wait(ctx context.Context) error {
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("pod %s: %w; output:\n%s", p.hostname, p.err, p.out.String())
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pod %s did not finish: %w; output so far:\n%s", p.hostname, ctx.Err(), p.out.String())
	}
}

// waitReady waits until the pod's readiness probe passes, probing from the
// node's namespace as the kubelet does. A container that exits first never
// becomes Ready.
func (k *kubelet) waitReady(ctx context.Context, p *pod) error {
	probe := p.spec.Containers[0].ReadinessProbe
	if probe == nil {
		return nil
	}
	if probe.TCPSocket == nil || probe.TCPSocket.Port.IntValue() == 0 {
		k.t.Fatalf("pod %s: the test runs numeric tcpSocket readiness probes only, not %+v", p.hostname, probe.ProbeHandler)
	}
	dial := fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", p.addr, probe.TCPSocket.Port.IntValue())
	for {
		if p.exited() {
			return fmt.Errorf("pod %s exited before it was Ready (%v); output:\n%s", p.hostname, p.err, p.out.String())
		}
		if exec.Command("ip", "netns", "exec", k.net.node, "bash", "-c", dial).Run() == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s never became Ready on port %d: %w; output:\n%s", p.hostname, probe.TCPSocket.Port.IntValue(), ctx.Err(), p.out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop kills the pods' containers and waits for them.
func (k *kubelet) stop() {
	for _, p := range k.pods {
		if p.cmd != nil && p.cmd.Process != nil && !p.exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a process's output and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
