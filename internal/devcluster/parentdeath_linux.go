//go:build linux

package devcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// controlPlaneShims puts in runDir a kube-apiserver and an etcd that are links
// to this executable: started through them, it sets SIGKILL as its
// parent-death signal and execs the binary of that name from the run's assets
// (see execShim). It returns the paths to give envtest.
func controlPlaneShims(runDir string) (apiServer, etcd string, err error) {
	apiServer, etcd = filepath.Join(runDir, "kube-apiserver"), filepath.Join(runDir, "etcd")
	for _, shim := range []string{apiServer, etcd} {
		// /proc/self/exe is resolved by the process that execs the link:
		// envtest's fork of this process, so this executable, even if its
		// file was since replaced or removed.
		if err := os.Symlink("/proc/self/exe", shim); err != nil {
			return "", "", fmt.Errorf("making the control plane's shims: %w", err)
		}
	}
	return apiServer, etcd, nil
}

// componentShim is controlPlaneShims for a component the framework starts
// itself (component.go): a link named name, in a folder of its own under
// runDir (one per instance) whose run spec names assets, the folder of the
// real binary.
func componentShim(runDir, assets, name, instance string) (string, error) {
	dir := filepath.Join(runDir, instance+"-shim")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	if err := writeRunSpec(dir, assets); err != nil {
		return "", err
	}
	shim := filepath.Join(dir, name)
	if err := os.Symlink("/proc/self/exe", shim); err != nil {
		return "", fmt.Errorf("making the %s shim: %w", name, err)
	}
	return shim, nil
}

// shimmed are the binaries started through a shim.
var shimmed = map[string]bool{"kube-apiserver": true, "etcd": true, controllerManager: true, kubeScheduler: true, kwok: true}

func init() { execShim() }

// execShim turns this process, when it was started through a shim of
// controlPlaneShims or componentShim, into the real binary with SIGKILL as its
// parent-death signal (the signal survives execve). Otherwise it returns at
// once. It runs from init, before main or the tests: the shim is the test
// binary or mpiguard-dev itself.
func execShim() {
	name := filepath.Base(os.Args[0])
	if !shimmed[name] {
		return
	}
	spec, err := readRunSpec(filepath.Dir(os.Args[0]))
	if errors.Is(err, fs.ErrNotExist) {
		return // not one of our shims
	}
	// From here on this process is a shim: it becomes the real binary or
	// exits, and never goes on to run main or the tests.
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "%s (mpiguard control plane shim): %v\n", name, err)
		os.Exit(127)
	}
	if err != nil {
		fail(err)
	}
	// The signal is the calling thread's, and execve keeps the thread's.
	runtime.LockOSThread()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); errno != 0 {
		fail(fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", errno))
	}
	if os.Getppid() != spec.Parent {
		fail(fmt.Errorf("the process that started it (pid %d) is already gone", spec.Parent))
	}
	bin := filepath.Join(spec.Assets, name)
	fail(syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), os.Environ()))
}
