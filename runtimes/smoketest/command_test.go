package smoketest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// TestLauncherCommand runs the smoke-test launcher script with stub mpirun and
// getent: mpirun prints one hostname per rank, as `mpirun ... hostname` does, and
// the script must leave the distinct hostnames in the termination message.
func TestLauncherCommand(t *testing.T) {
	// The launcher is host "a" (runLauncherAsNode): Hydra must find it under
	// its bare hostname in the hostfile, and hand -localhost its FQDN to the
	// Workers' proxies.
	hydraHostfile := "a:2\nb.job:2\n"
	cases := map[string]struct {
		wantArgs     string
		wantHostfile string // what Hydra reads, "" for OpenMPI (the Trainer's own)
	}{
		catalog.ImplementationOpenMPI: {wantArgs: "--hostfile HOSTFILE -np 4 --map-by slot hostname"},
		catalog.ImplementationIntel:   {wantArgs: "-f TMP/mpiguard-hostfile -localhost a.job -n 4 hostname", wantHostfile: hydraHostfile},
		catalog.ImplementationMPICH:   {wantArgs: "-f TMP/mpiguard-hostfile -localhost a.job -n 4 hostname", wantHostfile: hydraHostfile},
	}
	for impl, tc := range cases {
		t.Run(impl, func(t *testing.T) {
			dir := t.TempDir()
			bin, tmp := filepath.Join(dir, "bin"), filepath.Join(dir, "tmp")
			for _, d := range []string{bin, tmp} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			hostfile := filepath.Join(dir, "hostfile")
			write(t, hostfile, "a.job slots=2\nb.job slots=2\n", 0o644)
			argsFile := filepath.Join(dir, "args")
			// Intel MPI's mpirun is only on PATH once oneAPI's setvars.sh ran.
			mpirunDir, setvars := bin, filepath.Join(dir, "setvars.sh")
			if impl == catalog.ImplementationIntel {
				mpirunDir = filepath.Join(dir, "oneapi")
				if err := os.MkdirAll(mpirunDir, 0o755); err != nil {
					t.Fatal(err)
				}
				write(t, setvars, "export PATH="+mpirunDir+":$PATH\n", 0o644)
			}
			write(t, filepath.Join(mpirunDir, "mpirun"), "#!/bin/sh\necho \"$@\" > "+argsFile+"\nprintf 'a\\nb\\na\\nb\\n'\n", 0o755)
			write(t, filepath.Join(bin, "getent"), "#!/bin/sh\nexit 0\n", 0o755)
			write(t, filepath.Join(bin, "hostname"), "#!/bin/sh\nif [ \"${1:-}\" = -f ]; then echo a.job; else echo a; fi\n", 0o755)
			term := filepath.Join(dir, "termination-log")

			cmd := launcherCommand(impl)
			script := strings.NewReplacer(HostfilePath, hostfile, "/dev/termination-log", term, "/tmp/", tmp+"/", "/opt/intel/oneapi/setvars.sh", setvars).Replace(cmd[2])
			run := exec.Command(cmd[0], cmd[1], script)
			run.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			if out, err := run.CombinedOutput(); err != nil {
				t.Fatalf("script failed: %v\n%s", err, out)
			}
			got, _ := os.ReadFile(term)
			if diff := cmp.Diff("a\nb\n", string(got)); diff != "" {
				t.Errorf("termination message (-want +got):\n%s", diff)
			}
			args, _ := os.ReadFile(argsFile)
			want := strings.NewReplacer("HOSTFILE", hostfile, "TMP", tmp).Replace(tc.wantArgs)
			if diff := cmp.Diff(want, strings.TrimSpace(string(args))); diff != "" {
				t.Errorf("mpirun arguments (-want +got):\n%s", diff)
			}
			if tc.wantHostfile != "" {
				got, _ := os.ReadFile(filepath.Join(tmp, "mpiguard-hostfile"))
				if diff := cmp.Diff(tc.wantHostfile, string(got)); diff != "" {
					t.Errorf("Hydra's hostfile (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
