package devcluster

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
)

// The control plane dies with the process that started it (mpiguard-dev, a
// test binary), however that process ends: Ctrl-C, SIGKILL, `go test
// -timeout`. On Linux each of kube-apiserver and etcd carries a parent-death
// signal (SIGKILL). envtest builds their exec.Cmd itself, with a SysProcAttr
// of its own (Setpgid only, controller-runtime's internal process package), so
// there is no hook to set SysProcAttr.Pdeathsig on it: instead envtest is
// pointed at shims (parentdeath_linux.go), links to this very executable that
// set the signal on themselves and exec the real binary, which keeps it.
//
// The kernel sends that signal when the *thread* that forked the process ends,
// not the whole process (golang/go#27505), and the Go runtime ends a thread
// when a goroutine locked to it returns without unlocking it. So envtest's
// Start, which forks both processes, runs on a goroutine locked to its thread,
// and that goroutine holds the thread until the control plane is stopped
// (startOnOwnThread): the thread, hence the signal, ends only with the process.
//
// What the control plane writes (etcd's data, the apiserver's certificates)
// goes to a run folder with the shims, removed by Stop or, for a run killed
// before its Stop, by the next Start (removeStaleRunDirs).

const (
	// runDirPrefix names the run folders, in os.TempDir().
	runDirPrefix = "mpiguard-controlplane-"
	// runSpecFile, in a run folder, says where the real binaries are and which
	// process the folder is for.
	runSpecFile = "run.json"
)

type runSpec struct {
	// Assets holds the real kube-apiserver and etcd.
	Assets string `json:"assets"`
	// Parent is the PID of the process that runs the control plane: a shim
	// whose parent is another finds that process ended before the signal was
	// set; the folder of a Parent that is gone is stale.
	Parent int `json:"parent"`
}

// newRunDir makes a run folder for a control plane run from assets, with
// empty "etcd-data" and "apiserver-certs" folders.
func newRunDir(assets string) (string, error) {
	abs, err := filepath.Abs(assets)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", runDirPrefix)
	if err != nil {
		return "", err
	}
	err = writeRunSpec(dir, abs)
	for _, sub := range []string{"etcd-data", "apiserver-certs"} {
		if err == nil {
			err = os.Mkdir(filepath.Join(dir, sub), 0o700)
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// writeRunSpec says in dir that its shims run the binaries of assets for
// this process.
func writeRunSpec(dir, assets string) error {
	spec, err := json.Marshal(runSpec{Assets: assets, Parent: os.Getpid()})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, runSpecFile), spec, 0o644)
}

func readRunSpec(dir string) (runSpec, error) {
	var spec runSpec
	raw, err := os.ReadFile(filepath.Join(dir, runSpecFile))
	if err == nil {
		err = json.Unmarshal(raw, &spec)
	}
	return spec, err
}

// removeStaleRunDirs removes the run folders of processes that are gone: a
// run killed before its Stop leaves its folder behind (etcd's data: over
// 100 MB).
func removeStaleRunDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), runDirPrefix+"*"))
	for _, dir := range dirs {
		spec, err := readRunSpec(dir)
		if err != nil || spec.Parent <= 0 {
			continue // not written yet, or not ours
		}
		if err := syscall.Kill(spec.Parent, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}

// startOnOwnThread runs start on a goroutine locked to its OS thread and
// returns once start does. The goroutine keeps the thread, doing nothing,
// until release is called: no other goroutine runs there meanwhile, so none
// can lock it and end it. release gives the thread back to the runtime; call
// it once the processes start forked are stopped.
func startOnOwnThread(start func() error) (release func(), err error) {
	done := make(chan error, 1)
	quit := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		done <- start()
		<-quit
	}()
	err = <-done
	return sync.OnceFunc(func() { close(quit) }), err
}
