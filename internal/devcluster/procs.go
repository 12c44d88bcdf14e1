package devcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ProcStat is what /proc/PID/stat says of a process that tests need.
type ProcStat struct {
	// State is R, S, Z (zombie), X (dead), ...
	State string
	PPID  int
	// StartTime tells a process from a later one with the same PID.
	StartTime string
	// CPU is the time it has run so far, user and system (utime + stime).
	CPU time.Duration
}

// ReadProcStat reads /proc/PID/stat: the fields after the command name, which
// is in parentheses and may itself contain spaces or parentheses.
func ReadProcStat(pid int) (ProcStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ProcStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ProcStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	// state(3) ppid(4) ... utime(14) stime(15) ... starttime(22); f[0] is field 3.
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return ProcStat{}, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return ProcStat{}, err
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return ProcStat{}, fmt.Errorf("/proc/%d/stat: utime or stime: %w", pid, err)
	}
	// In clock ticks of USER_HZ, which the kernel fixes at 100 for user
	// space (include/asm-generic/param.h; only alpha and ia64 differ, where
	// Go does not run), whatever its internal HZ.
	cpu := time.Duration(utime+stime) * 10 * time.Millisecond
	return ProcStat{State: string(f[0]), PPID: ppid, StartTime: string(f[19]), CPU: cpu}, nil
}

// Process is a running process whose executable is in a given folder.
type Process struct {
	PID  int
	Name string
	ProcStat
}

// ProcessesRunning lists the processes whose executable lives in dir (the
// control plane's binaries). Processes it may not inspect are skipped; where
// /proc does not exist (not Linux) it finds none.
func ProcessesRunning(dir string) ([]Process, error) {
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil
	}
	var found []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || filepath.Dir(exe) != dir {
			continue
		}
		st, err := ReadProcStat(pid)
		if err != nil {
			continue
		}
		found = append(found, Process{PID: pid, Name: filepath.Base(exe), ProcStat: st})
	}
	return found, nil
}
