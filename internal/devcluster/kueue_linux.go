//go:build linux

package devcluster

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
)

// Kueue's manager reads its metrics certificate from a fixed path,
// /etc/kueue/metrics/certs (cmd/kueue/main.go, when internal cert management
// is off: in a cluster the Secret is mounted there). A test must not write
// into the machine's /etc, so Kueue runs in a mount namespace of its own (in
// a user namespace of its own, so no privilege is needed) where /etc is a
// folder of the run: links to every entry of the real /etc, plus
// kueue/metrics/certs with the run's self-signed certificate. The namespace
// is entered through this executable, as the control plane's shims are
// (parentdeath_linux.go): kueueShimName in argv[0] makes init set up the
// mounts and exec the real Kueue, with the parent-death signal that the
// fork set and exec keeps.

// kueueShimName is argv[0] of the process that becomes Kueue.
const kueueShimName = "mpiguard-kueue-shim"

// kueueShimEnv carries the shim's kueueShimSpec.
const kueueShimEnv = "MPIGUARD_KUEUE_SHIM"

type kueueShimSpec struct {
	// Bin is the real Kueue; Dir the run's folder (metrics-certs, etc,
	// etc-host); Parent the PID that started it.
	Bin    string `json:"bin"`
	Dir    string `json:"dir"`
	Parent int    `json:"parent"`
}

// kueueCommand is the command that runs Kueue's binary bin with args, its
// run's files in dir: through the shim, in its own user and mount
// namespaces, dying with this process.
func kueueCommand(bin, dir string, args ...string) *exec.Cmd {
	spec, _ := json.Marshal(kueueShimSpec{Bin: bin, Dir: dir, Parent: os.Getpid()})
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: append([]string{kueueShimName}, args...)}
	cmd.Env = append(cmd.Env, kueueShimEnv+"="+string(spec))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Pdeathsig:  syscall.SIGKILL,
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		// Root inside is this user outside: the mounts need it, the files
		// Kueue reads are this user's.
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
	return cmd
}

func init() { execKueueShim() }

// execKueueShim turns this process, when started by kueueCommand, into Kueue
// with /etc/kueue/metrics/certs in place; otherwise it returns at once.
func execKueueShim() {
	if filepath.Base(os.Args[0]) != kueueShimName {
		return
	}
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", kueueShimName, err)
		os.Exit(127)
	}
	var spec kueueShimSpec
	if err := json.Unmarshal([]byte(os.Getenv(kueueShimEnv)), &spec); err != nil {
		fail(fmt.Errorf("reading %s: %w", kueueShimEnv, err))
	}
	// The mounts are this thread's namespace's, and exec keeps the thread.
	runtime.LockOSThread()
	if os.Getppid() != spec.Parent {
		fail(fmt.Errorf("the process that started it (pid %d) is already gone", spec.Parent))
	}
	if err := privateEtc(spec.Dir); err != nil {
		fail(err)
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if len(kv) < len(kueueShimEnv) || kv[:len(kueueShimEnv)] != kueueShimEnv {
			env = append(env, kv)
		}
	}
	fail(syscall.Exec(spec.Bin, append([]string{spec.Bin}, os.Args[1:]...), env))
}

// privateEtc makes /etc, in this mount namespace only, the run's folder
// dir/etc: a link to each entry of the real /etc (bound at dir/etc-host)
// and kueue/metrics/certs holding dir/metrics-certs' files.
func privateEtc(dir string) error {
	host, etc := filepath.Join(dir, "etc-host"), filepath.Join(dir, "etc")
	// Nothing mounted here may propagate to the machine's namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	for _, d := range []string{host, filepath.Join(etc, "kueue", "metrics", "certs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := syscall.Mount("/etc", host, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("binding /etc: %w", err)
	}
	entries, err := os.ReadDir(host)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == "kueue" {
			continue
		}
		if err := os.Symlink(filepath.Join(host, e.Name()), filepath.Join(etc, e.Name())); err != nil {
			return err
		}
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := copyFile(filepath.Join(dir, "metrics-certs", f), filepath.Join(etc, "kueue", "metrics", "certs", f)); err != nil {
			return err
		}
	}
	if err := syscall.Mount(etc, "/etc", "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding %s on /etc: %w", etc, err)
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
