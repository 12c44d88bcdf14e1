package catalog

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLauncherScripts runs each template's launcher script with /bin/sh against a
// hostfile in the Trainer's OpenMPI format, with stub mpirun/getent/hostname on
// PATH, and checks the exact mpirun command line (and, for Hydra, the converted
// hostfile: the launcher's own line names it as gethostname() does, the one
// name Hydra starts locally rather than over SSH; and -localhost gives the
// Workers' proxies its FQDN to call back).
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
	hydraHostfile := "job-node-0-0.job:3\njob-node-0-1.job:3\njob-launcher-0-0:3\n"
	// The launcher pod's names: its hostname, and the FQDN the kubelet's
	// /etc/hosts gives it (hostname -f).
	const self, fqdn = "job-launcher-0-0", "job-launcher-0-0.job.team-a.svc.cluster.local"
	cases := map[string]struct {
		wantArgs     string
		wantHostfile string
	}{
		"openmpi-v1.yaml":   {wantArgs: "--hostfile HOSTFILE -np 9 --map-by slot --bind-to none python train.py"},
		"openmpi-v2.yaml":   {wantArgs: "--hostfile HOSTFILE -np 9 --map-by slot --bind-to none python train.py"},
		"deepspeed-v1.yaml": {wantArgs: "--hostfile HOSTFILE -np 9 --map-by slot --bind-to none python train.py"},
		"intelmpi-v1.yaml":  {wantArgs: "-f HYDRA -ppn 3 -localhost " + fqdn + " -n 9 python train.py", wantHostfile: hydraHostfile},
		"mpich-v1.yaml":     {wantArgs: "-f HYDRA -ppn 3 -localhost " + fqdn + " -n 9 python train.py", wantHostfile: hydraHostfile},
	}
	for _, tpl := range tpls {
		tc, ok := cases[tpl.File]
		if !ok {
			t.Errorf("no launcher script case for %s", tpl.File)
			continue
		}
		t.Run(tpl.File, func(t *testing.T) {
			dir, out, err := runLauncherScript(t, tpl, hostfile, self, fqdn)
			if err != nil {
				t.Fatalf("launcher script failed: %v", err)
			}
			got, err := os.ReadFile(out)
			must(t, err)
			hydraDir := filepath.Join(dir, "hydra")
			want := strings.NewReplacer("HOSTFILE", filepath.Join(dir, "hostfile"), "HYDRA", filepath.Join(hydraDir, "hostfile")).Replace(tc.wantArgs)
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
		if impl := tpl.Runtime.Labels[LabelMPIImplementation]; impl != ImplementationMPICH && impl != ImplementationIntel {
			continue
		}
		// A hostfile that does not name this launcher would have Hydra ssh to
		// every host, the launcher's own line included, and hang: the script
		// refuses it before mpirun.
		t.Run(tpl.File+"/hostfile without this launcher", func(t *testing.T) {
			_, out, err := runLauncherScript(t, tpl, hostfile, "other-launcher-0-0", "other-launcher-0-0.job.team-a.svc.cluster.local")
			if err == nil || !strings.Contains(err.Error(), "must name this launcher (other-launcher-0-0.<subdomain>) on exactly one line") {
				t.Errorf("launcher script = %v, want it to fail naming the launcher it did not find", err)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("mpirun ran")
			}
		})
	}
}

// runLauncherScript runs tpl's launcher script as TestLauncherScripts
// describes, in a pod named self (hostname -f: fqdn), and returns its folder,
// the file the stub mpirun writes its arguments to, and the script's failure
// with its output.
func runLauncherScript(t *testing.T, tpl Template, hostfile, self, fqdn string) (dir, out string, err error) {
	t.Helper()
	dir = t.TempDir()
	bin := filepath.Join(dir, "bin")
	must(t, os.MkdirAll(bin, 0o755))
	hf := filepath.Join(dir, "hostfile")
	must(t, os.WriteFile(hf, []byte(hostfile), 0o644))
	out = filepath.Join(dir, "mpirun.args")
	// Intel MPI's mpirun is only on PATH once oneAPI's setvars.sh ran.
	mpirunDir, setvars := bin, filepath.Join(dir, "setvars.sh")
	if tpl.Runtime.Labels[LabelMPIImplementation] == ImplementationIntel {
		mpirunDir = filepath.Join(dir, "oneapi")
		must(t, os.MkdirAll(mpirunDir, 0o755))
		must(t, os.WriteFile(setvars, []byte("export PATH="+mpirunDir+":$PATH\n"), 0o644))
	}
	must(t, os.WriteFile(filepath.Join(mpirunDir, "mpirun"), []byte("#!/bin/sh\necho \"$@\" > "+out+"\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(bin, "getent"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(bin, "hostname"), []byte("#!/bin/sh\n[ \"$1\" = -f ] && echo "+fqdn+" || echo "+self+"\n"), 0o755))

	launcher := tpl.Runtime.Spec.Template.Spec.ReplicatedJobs[1]
	cmd := nodeContainer(launcher.Template.Spec.Template.Spec).Command
	script := strings.NewReplacer("/etc/mpi/hostfile", hf, "/tmp/mpiguard", filepath.Join(dir, "hydra"), "/opt/intel/oneapi/setvars.sh", setvars).Replace(cmd[2])
	run := exec.Command(cmd[0], cmd[1], script, cmd[3], "python", "train.py")
	run.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	if b, runErr := run.CombinedOutput(); runErr != nil {
		err = fmt.Errorf("%w: %s", runErr, b)
	}
	return dir, out, err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
