// Package devrun checks `make run`: bin/mpiguard-dev is built and run as
// the Makefile runs it; its demo runs the quota loop to the end on the local
// cluster (jobs on KWOK nodes), and after Ctrl-C with its stdout piped into a
// reader that is gone (`make run | tee run.log`: tee dies of the same
// Ctrl-C), or after SIGKILL, no kube-apiserver, etcd,
// kube-controller-manager, kube-scheduler or KWOK it started may remain. Nor may they outlive a test binary killed with its control plane
// up, as `go test -timeout` ends one. Linux only: the parent-death signal is
// Linux's, and the processes are found in /proc.
package devrun

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpiguard/mpiguard/internal/devcluster"
	"github.com/mpiguard/mpiguard/test/framework"
)

const (
	// readyLine is what mpiguard-dev prints once it serves (after its demo
	// succeeded; -no-demo: right after the cluster and mpiguard are up), and
	// what TestHelperTestBinary prints once its control plane is.
	readyLine = "ready; press Ctrl-C to stop"
	// helperEnv makes TestHelperTestBinary run.
	helperEnv = "MPIGUARD_DEVRUN_HELPER"
	// startBound covers the cluster's start and mpiguard's, and the demo
	// (about 35 s on a free machine), on 2 busy cores.
	startBound = 4 * time.Minute
	// stopBound covers mpiguard-dev's cleanup after Ctrl-C (envtest gives
	// each of kube-apiserver and etcd 30s to stop).
	stopBound = 2 * time.Minute
	// deathBound is how long the control plane may outlive mpiguard-dev.
	deathBound = 15 * time.Second
)

func TestControlPlaneDoesNotOutliveMpiguardDev(t *testing.T) {
	assets := requirements(t)
	bin := buildDev(t)
	devCmd := func(t *testing.T, args ...string) *exec.Cmd {
		return exec.Command(bin, append(args, "-kubeconfig-out", filepath.Join(t.TempDir(), "kubeconfig"))...)
	}

	// The demo, as `make run` runs it: ready means it succeeded (a failed
	// step ends mpiguard-dev with an error instead).
	t.Run("demo, then Ctrl-C with stdout closed", func(t *testing.T) {
		dev := startDev(t, devCmd(t), assets)
		expectQuotaLoop(t, dev.out)
		expectNetworkVerdicts(t, dev.out)
		// tee dies of the Ctrl-C first: mpiguard-dev's next line meets a
		// closed pipe.
		dev.closeStdout()
		if err := syscall.Kill(-dev.pid(), syscall.SIGINT); err != nil { // the terminal signals the whole job
			t.Fatal(err)
		}
		err := dev.wait(stopBound)
		if err != nil {
			t.Errorf("mpiguard-dev did not exit cleanly after Ctrl-C with its stdout closed: %v (a SIGPIPE death skips the cleanup)\nstderr:\n%s", err, dev.stderr())
		}
		dev.expectControlPlaneGone(t, deathBound)
	})

	t.Run("SIGKILL", func(t *testing.T) {
		dev := startDev(t, devCmd(t, "-no-demo"), assets)
		if err := syscall.Kill(dev.pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = dev.wait(stopBound) // killed: no cleanup ran, the children are on their own
		dev.expectControlPlaneGone(t, deathBound)
	})
}

// TestControlPlaneDoesNotOutliveTestBinary: a test binary (this one, running
// TestHelperTestBinary) that starts the control plane through
// framework.Start, as every suite does, and is then killed with no cleanup,
// as `go test -timeout` ends one, takes the control plane with it.
func TestControlPlaneDoesNotOutliveTestBinary(t *testing.T) {
	assets := requirements(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTestBinary$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	suite := startDev(t, cmd, assets)
	if err := syscall.Kill(suite.pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = suite.wait(stopBound)
	suite.expectControlPlaneGone(t, deathBound)
}

// TestHelperTestBinary is TestControlPlaneDoesNotOutliveTestBinary's suite:
// it starts the control plane and waits to be killed.
func TestHelperTestBinary(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("run by TestControlPlaneDoesNotOutliveTestBinary")
	}
	env, err := framework.Start(context.Background(), framework.Options{Name: "devrun", NoManager: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop(false) }()
	fmt.Println(readyLine)
	time.Sleep(startBound + stopBound) // killed long before
}

func requirements(t *testing.T) (assets string) {
	t.Helper()
	assets = os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Skip("KUBEBUILDER_ASSETS is unset: run through `make test-integration`, or set it to the control plane's folder (ls -d ~/.cache/mpiguard/controlplane/k8s-*)")
	}
	return assets
}

// buildDev builds cmd/mpiguard-dev as `make run` does.
func buildDev(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mpiguard-dev")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/mpiguard-dev")
	cmd.Dir = framework.RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mpiguard-dev: %v\n%s", err, out)
	}
	return bin
}

type devRun struct {
	cmd        *exec.Cmd
	stdout     *os.File // the read end of its stdout
	stderrPath string
	exited     chan struct{}
	waitErr    error
	children   []proc   // the control plane and components it started
	out        []string // its stdout until it was ready
}

type proc struct {
	name      string
	pid       int
	startTime string // tells the process from a later one with the same PID
}

// startDev runs cmd (mpiguard-dev, or the helper suite) in a process group
// of its own (as a shell runs a job), reads its stdout until it says it is
// ready, and records the processes it started: kube-apiserver and etcd, and
// for mpiguard-dev kube-controller-manager, kube-scheduler and KWOK.
func startDev(t *testing.T, cmd *exec.Cmd, assets string) *devRun {
	t.Helper()
	tmp := t.TempDir()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	// TMPDIR: the files of a control plane whose process is killed go with
	// the test's.
	cmd.Env = append(cmd.Env, "KUBEBUILDER_ASSETS="+assets, "MPIGUARD_TEST_LOGS="+filepath.Join(tmp, "logs"), "TMPDIR="+tmp)
	// Pdeathsig: should this test binary be killed (`go test -timeout`),
	// the process goes too, and its control plane with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	dev := &devRun{cmd: cmd, stdout: stdoutR, stderrPath: filepath.Join(tmp, "stderr"), exited: make(chan struct{})}
	stderr, err := os.Create(dev.stderrPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stderr.Close() }()
	cmd.Stdout, cmd.Stderr = stdoutW, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = stdoutW.Close()
	go func() {
		dev.waitErr = cmd.Wait()
		close(dev.exited)
	}()
	// Runs before t.TempDir's removal: whatever the outcome, nothing is left.
	t.Cleanup(dev.killAll)

	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdoutR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var out []string
	timeout := time.After(startBound)
	for ready := false; !ready; {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("%s ended before it was ready\nstdout:\n%s\nstderr:\n%s", filepath.Base(cmd.Path), strings.Join(out, "\n"), dev.stderr())
			}
			out = append(out, line)
			ready = strings.Contains(line, readyLine)
		case <-timeout:
			t.Fatalf("%s not ready within %s\nstdout:\n%s\nstderr:\n%s", filepath.Base(cmd.Path), startBound, strings.Join(out, "\n"), dev.stderr())
		}
	}
	// Nothing more is printed until Ctrl-C; the reader goroutine ends when
	// closeStdout closes the pipe or the process exits.
	go func() {
		for range lines { //nolint:revive // drains the pipe: nothing is read from it
		}
	}()

	dev.out = out

	want := []string{"kube-apiserver", "etcd"}
	dirs := []string{assets}
	if filepath.Base(cmd.Path) == "mpiguard-dev" {
		kwok, err := devcluster.KWOKAssets()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, "kube-controller-manager", "kube-scheduler", "kwok")
		dirs = append(dirs, kwok)
	}
	for _, dir := range dirs {
		children, err := childrenFrom(dev.pid(), dir)
		if err != nil {
			t.Fatal(err)
		}
		dev.children = append(dev.children, children...)
	}
	names := map[string]bool{}
	for _, c := range dev.children {
		names[c.name] = true
	}
	for _, name := range want {
		if !names[name] {
			t.Fatalf("%s (pid %d) is ready but its children from %v are %v: want %v", filepath.Base(cmd.Path), dev.pid(), dirs, dev.children, want)
		}
	}
	return dev
}

func (d *devRun) pid() int { return d.cmd.Process.Pid }

// closeStdout closes the reading end of the process's stdout, as tee does
// when Ctrl-C kills it.
func (d *devRun) closeStdout() { _ = d.stdout.Close() }

// wait waits up to bound for the process to exit and returns how it ended.
func (d *devRun) wait(bound time.Duration) error {
	select {
	case <-d.exited:
		return d.waitErr
	case <-time.After(bound):
		return fmt.Errorf("still running after %s", bound)
	}
}

func (d *devRun) stderr() string {
	b, _ := os.ReadFile(d.stderrPath)
	return string(b)
}

// expectControlPlaneGone fails unless every recorded child is gone within bound.
func (d *devRun) expectControlPlaneGone(t *testing.T, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		var alive []proc
		for _, c := range d.children {
			if c.alive() {
				alive = append(alive, c)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d s after %s (pid %d) ended, the control plane it started still runs: %v\nits stderr:\n%s",
				int(bound.Seconds()), filepath.Base(d.cmd.Path), d.pid(), alive, d.stderr())
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killAll kills the process's group and any recorded child still alive.
func (d *devRun) killAll() {
	select {
	case <-d.exited:
	default:
		_ = syscall.Kill(-d.pid(), syscall.SIGKILL)
		<-d.exited
	}
	for _, c := range d.children {
		if c.alive() {
			_ = syscall.Kill(c.pid, syscall.SIGKILL)
		}
	}
	_ = d.stdout.Close()
}

// childrenFrom lists the processes whose parent is ppid and whose
// executable lives in dir.
func childrenFrom(ppid int, dir string) ([]proc, error) {
	procs, err := framework.ProcessesRunning(dir)
	if err != nil {
		return nil, err
	}
	var found []proc
	for _, p := range procs {
		if p.PPID == ppid {
			found = append(found, proc{name: p.Name, pid: p.PID, startTime: p.StartTime})
		}
	}
	return found, nil
}

// alive: the same process (same start time) still exists and is not a zombie
// (a killed orphan may wait forever for a PID 1 that does not reap).
func (p proc) alive() bool {
	st, err := framework.ReadProcStat(p.pid)
	if err != nil {
		return false
	}
	return st.StartTime == p.startTime && st.State != "Z" && st.State != "X"
}

func (p proc) String() string { return fmt.Sprintf("%s (pid %d)", p.name, p.pid) }

// expectNetworkVerdicts fails unless the demo shows the NetworkPolicy
// matcher's verdicts on a Worker reaching an outside S3 address
// (cmd/mpiguard-dev/demo.go, showNetworkPolicy): allowed under the default
// template, refused under the strict one.
func expectNetworkVerdicts(t *testing.T, out []string) {
	t.Helper()
	all := strings.Join(out, "\n")
	for _, want := range []string{
		"a Worker → S3 52.216.8.10:443, under template ingress-isolated: allowed",
		"the same connection under template job-isolated: refused (egress of the source)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("mpiguard-dev's demo does not show %q:\n%s", want, all)
		}
	}
}

// expectQuotaLoop fails unless mpiguard-dev's output shows each step of the
// quota loop (cmd/mpiguard-dev/loop.go), in order.
func expectQuotaLoop(t *testing.T, out []string) {
	t.Helper()
	steps := []string{
		"[loop 1]", "resnet-2x4 admitted",
		"[loop 2]", "its pods are Running on KWOK nodes",
		"Running  on kwok-node-",
		"[loop 3]", "status.used, counted by the cluster",
		"[loop 4]", "the reservation of resnet-2x4 is retired",
		"[loop 5]", "bert-3x4 refused while resnet-2x4 runs",
		"[loop 6]", "resnet-2x4 finished",
		"[loop 7]", "gave the quota back",
		"[loop 8]", "bert-3x4 admitted",
		"quota loop done in",
	}
	all := strings.Join(out, "\n")
	rest := all
	for _, step := range steps {
		i := strings.Index(rest, step)
		if i < 0 {
			t.Fatalf("mpiguard-dev's demo does not show %q (after the steps before it):\n%s", step, all)
		}
		rest = rest[i+len(step):]
	}
}
