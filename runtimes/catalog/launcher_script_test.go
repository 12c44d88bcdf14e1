package catalog

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLauncherScripts runs each template's launcher script with /bin/sh against a
// hostfile in the Trainer's OpenMPI format, with stub mpirun/getent on PATH, and
// checks the exact mpirun command line (and, for Hydra, the converted hostfile).
func TestLauncherScripts(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	tpls, err := Templates()
	if err != nil {
		t.Fatal(err)
	}
	// What the Trainer writes for numNodes 3 and numProcPerNode 3 on a
	// runLauncherAsNode runtime: the Workers (node job first), then the launcher.
	hostfile := "job-node-0-0.job slots=3\njob-node-0-1.job slots=3\njob-launcher-0-0.job slots=3\n"
	hydraHostfile := "job-node-0-0.job:3\njob-node-0-1.job:3\njob-launcher-0-0.job:3\n"
	cases := map[string]struct {
		wantArgs     string
		wantHostfile string
	}{
		"openmpi-v1.yaml":   {wantArgs: "--hostfile HOSTFILE -np 9 --map-by slot --bind-to none python train.py"},
		"openmpi-v2.yaml":   {wantArgs: "--hostfile HOSTFILE -np 9 --map-by slot --bind-to none python train.py"},
		"deepspeed-v1.yaml": {wantArgs: "--hostfile HOSTFILE -np 9 --map-by slot --bind-to none python train.py"},
		"intelmpi-v1.yaml":  {wantArgs: "-f HYDRA -n 9 -ppn 3 python train.py", wantHostfile: hydraHostfile},
		"mpich-v1.yaml":     {wantArgs: "-f HYDRA -n 9 -ppn 3 python train.py", wantHostfile: hydraHostfile},
	}
	for _, tpl := range tpls {
		tc, ok := cases[tpl.File]
		if !ok {
			t.Errorf("no launcher script case for %s", tpl.File)
			continue
		}
		t.Run(tpl.File, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "bin")
			must(t, os.MkdirAll(bin, 0o755))
			hf := filepath.Join(dir, "hostfile")
			must(t, os.WriteFile(hf, []byte(hostfile), 0o644))
			out := filepath.Join(dir, "mpirun.args")
			// Intel MPI's mpirun is only on PATH once oneAPI's setvars.sh ran.
			mpirunDir, setvars := bin, filepath.Join(dir, "setvars.sh")
			if tpl.Runtime.Labels[LabelMPIImplementation] == ImplementationIntel {
				mpirunDir = filepath.Join(dir, "oneapi")
				must(t, os.MkdirAll(mpirunDir, 0o755))
				must(t, os.WriteFile(setvars, []byte("export PATH="+mpirunDir+":$PATH\n"), 0o644))
			}
			must(t, os.WriteFile(filepath.Join(mpirunDir, "mpirun"), []byte("#!/bin/sh\necho \"$@\" > "+out+"\n"), 0o755))
			must(t, os.WriteFile(filepath.Join(bin, "getent"), []byte("#!/bin/sh\nexit 0\n"), 0o755))

			launcher := tpl.Runtime.Spec.Template.Spec.ReplicatedJobs[1]
			cmd := nodeContainer(launcher.Template.Spec.Template.Spec).Command
			hydraDir := filepath.Join(dir, "hydra")
			script := strings.NewReplacer("/etc/mpi/hostfile", hf, "/tmp/mpiguard", hydraDir, "/opt/intel/oneapi/setvars.sh", setvars).Replace(cmd[2])
			run := exec.Command(cmd[0], cmd[1], script, cmd[3], "python", "train.py")
			run.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			if b, err := run.CombinedOutput(); err != nil {
				t.Fatalf("launcher script failed: %v\n%s", err, b)
			}
			got, err := os.ReadFile(out)
			must(t, err)
			want := strings.NewReplacer("HOSTFILE", hf, "HYDRA", filepath.Join(hydraDir, "hostfile")).Replace(tc.wantArgs)
			if diff := cmp.Diff(want, strings.TrimSpace(string(got))); diff != "" {
				t.Errorf("mpirun arguments (-want +got):\n%s", diff)
			}
			if tc.wantHostfile != "" {
				conv, err := os.ReadFile(filepath.Join(hydraDir, "hostfile"))
				must(t, err)
				if diff := cmp.Diff(tc.wantHostfile, string(conv)); diff != "" {
					t.Errorf("converted hostfile (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
