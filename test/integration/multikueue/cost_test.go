package multikueue

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/mpiguard/mpiguard/test/framework"
)

// cost is what the suite measures of itself, printed when it ends: how long
// each step of BeforeSuite took (from its start), and the peak resident
// memory of every process it ran. docs/kueue.md records it.
var cost struct {
	planes, kueues, ready time.Duration
}

// The processes' peak memory is read while they still run: AfterSuite runs
// before the cleanups BeforeSuite deferred.
var _ = AfterSuite(func() {
	if manager == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "MultiKueue suite cost: two control planes with mpiguard (2 replicas each) and the Trainer up after %s, both Kueue managers ready after %s, Kueue objects ready after %s, specs done after %s\n",
		cost.planes.Round(time.Second), cost.kueues.Round(time.Second), cost.ready.Round(time.Second), time.Since(started).Round(time.Second))
	var total int
	for _, p := range children() {
		fmt.Fprintf(&b, "  %-16s pid %-7d peak RSS %4d MB\n", p.name, p.pid, p.peakKB/1024)
		total += p.peakKB
	}
	self := peakKB(os.Getpid())
	fmt.Fprintf(&b, "  %-16s pid %-7d peak RSS %4d MB\n", "test process", os.Getpid(), self/1024)
	total += self
	fmt.Fprintf(&b, "  sum of peaks: %d MB\n", total/1024)
	// Straight to stdout: `go test -v` shows it for a passing suite too.
	_, _ = os.Stdout.WriteString(b.String())
})

type child struct {
	name   string
	pid    int
	peakKB int
}

// children are the processes this test process started whose executable is
// the control plane's (kube-apiserver, etcd) or Kueue's: both are started
// through this executable (shims), which execs them, so their parent is this
// process; other suites' control planes on the machine are left out.
func children() []child {
	var dirs []string
	if assets, err := framework.BinaryAssets(); err == nil {
		dirs = append(dirs, assets)
	}
	if bin, err := framework.KueueBinary(); err == nil {
		dirs = append(dirs, filepath.Dir(bin))
	}
	var out []child
	for _, dir := range dirs {
		procs, err := framework.ProcessesRunning(dir)
		if err != nil {
			continue
		}
		for _, p := range procs {
			if p.PPID == os.Getpid() {
				out = append(out, child{name: p.Name, pid: p.PID, peakKB: peakKB(p.PID)})
			}
		}
	}
	return out
}

// peakKB is a process's peak resident set (VmHWM in /proc/PID/status), in
// kB; 0 when it cannot be read.
func peakKB(pid int) int {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb
		}
	}
	return 0
}
