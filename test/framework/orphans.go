package framework

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil
	}
	var killed []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || filepath.Dir(exe) != dir {
			continue
		}
		if _, ppid, err := procStat(pid); err != nil || ppid != 1 {
			continue
		}
		// ESRCH: it ended between the look and the kill, which is what we want.
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return killed, fmt.Errorf("killing orphaned %s (pid %d): %w", filepath.Base(exe), pid, err)
		}
		killed = append(killed, pid)
	}
	return killed, nil
}

// procStat reads a process's state (R, S, Z, ...) and its parent's PID from
// /proc/PID/stat; the command name before them is in parentheses and may
// itself contain spaces or parentheses.
func procStat(pid int) (state string, ppid int, err error) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 2 {
		return "", 0, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	ppid, err = strconv.Atoi(string(fields[1]))
	return string(fields[0]), ppid, err
}
