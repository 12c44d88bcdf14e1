package devcluster

import (
	"errors"
	"fmt"
	"syscall"
)

// reapOrphanedControlPlanes kills kube-apiserver and etcd processes left by
// earlier test runs: processes whose executable lives in dir (the control
// plane's binaries) and whose parent is gone, so they were re-parented to
// PID 1. They are left when `go test -timeout` ends a suite: the test binary
// exits at once, no cleanup runs, and envtest starts them in process groups of
// their own. Now that the control plane carries a parent-death signal
// (parentdeath.go) that no longer happens on Linux: this stays as a backstop,
// for control planes left by older runs. A running suite's or `make run`'s
// control plane still has its parent and is left alone. It returns the PIDs
// it killed; processes it may not inspect are skipped (Linux only: elsewhere
// /proc does not exist and nothing is done).
func reapOrphanedControlPlanes(dir string) ([]int, error) {
	procs, err := ProcessesRunning(dir)
	if err != nil {
		return nil, err
	}
	var killed []int
	for _, p := range procs {
		if p.PPID != 1 {
			continue
		}
		// ESRCH: it ended between the look and the kill, which is what we want.
		if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return killed, fmt.Errorf("killing orphaned %s (pid %d): %w", p.Name, p.PID, err)
		}
		killed = append(killed, p.PID)
	}
	return killed, nil
}
