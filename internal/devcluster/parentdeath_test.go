//go:build linux

package devcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeControlPlane makes a folder with copies of the named system programs
// under the control plane's names (name -> program), as orphans_test does.
func fakeControlPlane(t *testing.T, programs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, program := range programs {
		path, err := exec.LookPath(program)
		if err != nil {
			t.Skipf("no %s binary", program)
		}
		bin, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), bin, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// shims makes a run folder for assets with its shims, removed when t ends.
func shims(t *testing.T, assets string) (apiServer, etcd string) {
	t.Helper()
	dir, err := newRunDir(assets)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if apiServer, etcd, err = controlPlaneShims(dir); err != nil {
		t.Fatal(err)
	}
	return apiServer, etcd
}

// TestShimRunsTheRealBinary: a shim becomes the binary of its name in the
// assets folder, with the arguments it was given.
func TestShimRunsTheRealBinary(t *testing.T) {
	assets := fakeControlPlane(t, map[string]string{"kube-apiserver": "echo"})
	apiServer, _ := shims(t, assets)
	out, err := exec.Command(apiServer, "--etcd-servers=http://127.0.0.1:1", "a b").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "--etcd-servers=http://127.0.0.1:1 a b"; got != want {
		t.Errorf("the shim printed %q, want %q", got, want)
	}
}

// shimParentEnv makes TestShimDiesWithItsParent a helper: the parent that
// starts a process through a shim, as Env.Start does, and is then killed.
const shimParentEnv = "MPIGUARD_SHIM_PARENT_ASSETS"

// TestShimDiesWithItsParent: a process started through a shim, from
// startOnOwnThread as Env.Start starts the control plane, is killed by the
// kernel when the process that started it is killed (SIGKILL: nothing of it
// runs), with no one else sending it a signal.
func TestShimDiesWithItsParent(t *testing.T) {
	if assets := os.Getenv(shimParentEnv); assets != "" {
		shimParent(t, assets)
		return
	}
	assets := fakeControlPlane(t, map[string]string{"etcd": "sleep"})
	parent := exec.Command(os.Args[0], "-test.run=^TestShimDiesWithItsParent$")
	// TMPDIR: the killed parent's run folder goes with the test's.
	parent.Env = append(os.Environ(), shimParentEnv+"="+assets, "TMPDIR="+t.TempDir())
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil {
		t.Fatalf("reading the shim's pid from the parent: %v", err)
	}
	child, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Kill() }()

	// Once the shim has exec'd, the process is the real binary, its
	// parent-death signal set.
	want := filepath.Join(assets, "etcd")
	for deadline := time.Now().Add(10 * time.Second); ; {
		if exe, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe")); exe == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shim (pid %d) did not exec %s", pid, want)
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	for deadline := time.Now().Add(10 * time.Second); ; {
		st, err := ReadProcStat(pid)
		if err != nil || st.State == "Z" || st.State == "X" { // gone, or dead and not reaped (yet)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d (state %s) still runs 10s after the process that started it was killed", pid, st.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// shimParent starts assets' etcd through a shim from startOnOwnThread, prints
// its pid and waits to be killed.
func shimParent(t *testing.T, assets string) {
	_, etcd := shims(t, assets)
	var cmd *exec.Cmd
	release, err := startOnOwnThread(func() error {
		cmd = exec.Command(etcd, "60")
		return cmd.Start()
	})
	defer release()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(cmd.Process.Pid)
	_ = cmd.Wait()
}

// TestRemoveStaleRunDirsKeepsLiveOnes: the run folder of a process that is
// gone is removed, that of a running one is kept.
func TestRemoveStaleRunDirsKeepsLiveOnes(t *testing.T) {
	live, err := newRunDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(live) }()
	// A process that is gone: one that has exited and been waited for.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no true binary")
	}
	stale, err := os.MkdirTemp("", runDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(stale) }()
	spec := `{"assets":"/nonexistent","parent":` + strconv.Itoa(gone.Process.Pid) + `}`
	if err := os.WriteFile(filepath.Join(stale, runSpecFile), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}

	removeStaleRunDirs()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the folder of gone pid %d is still there (%v)", gone.Process.Pid, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("this process's folder was removed: %v", err)
	}
}
