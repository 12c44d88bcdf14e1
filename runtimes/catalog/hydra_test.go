package catalog

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/internal/render"
)

// requireHydraEnv makes a missing Hydra a failure instead of a skip; `make test`
// sets it after installing Debian's mpich.
const requireHydraEnv = "MPIGUARD_REQUIRE_HYDRA"

// hydraJob names the rendered TrainJob, hence the JobSet and its pods' hostnames.
const hydraJob = "hydra"

// rankLine is what every rank of the test program prints.
var rankLine = regexp.MustCompile(`^mpiguard-rank (\d+) of (\d+) on (\S+)$`)

// TestHydraStartsSlotsPerWorkerOnEveryHost runs the launcher command of the Hydra
// runtimes (MPICH, Intel MPI) with a real Hydra process manager (Debian's MPICH)
// against the hostfile the Trainer's own MPI plugin renders, and checks where
// every rank starts. TestLauncherScripts checks the mpirun command line with a
// stub; this checks what Hydra makes of it and of the Trainer's hostfile: one
// block of Slots per worker on every Worker and on the Launcher (runLauncherAsNode),
// in the order of the Trainer's hostfile.
//
// Hydra's fork launcher starts each host's proxy on this machine instead of over
// SSH, so no cluster or DNS is needed; hostfile parsing and rank placement are
// Hydra's own. The launcher runs in a stand-in for its pod: hostname says the
// pod's name, which the launcher writes as its own hostfile line. Intel MPI's
// mpirun is Hydra too, but Intel's build is not installable here: its runtime
// is run with MPICH's Hydra. test/mpi runs the same over real SSH.
func TestHydraStartsSlotsPerWorkerOnEveryHost(t *testing.T) {
	hydra := lookHydra(t)
	r, err := render.NewRenderer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tpls, err := Templates()
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, tpl := range tpls {
		impl := tpl.Runtime.Labels[LabelMPIImplementation]
		if impl != ImplementationMPICH && impl != ImplementationIntel {
			continue
		}
		ran++
		for _, size := range []struct{ numNodes, slots int32 }{{1, 2}, {3, 2}, {4, 1}} {
			t.Run(fmt.Sprintf("%s/numNodes=%d/slots=%d", tpl.File, size.numNodes, size.slots), func(t *testing.T) {
				view, launcher := renderHydraJob(t, r, tpl.Runtime, size.numNodes, size.slots)
				got := runLauncher(t, hydra, launcher, view.Hostfile, fmt.Sprintf("%s-%s-0-0", hydraJob, view.Launcher.Name))

				// The Trainer's hosts: every Worker pod, then the Launcher
				// (runLauncherAsNode), by its bare hostname (what Hydra starts
				// locally). numNodes 1 still gets one Worker: the Trainer sizes
				// the node job max(numNodes-1, 1).
				wantWorkers := max(size.numNodes-1, 1)
				if view.Workers.Pods != wantWorkers {
					t.Errorf("%d Workers for numNodes %d, want %d", view.Workers.Pods, size.numNodes, wantWorkers)
				}
				var hosts []string
				for i := range wantWorkers {
					hosts = append(hosts, fmt.Sprintf("%s-%s-0-%d.%s", hydraJob, view.Workers.Name, i, hydraJob))
				}
				hosts = append(hosts, fmt.Sprintf("%s-%s-0-0", hydraJob, view.Launcher.Name))
				// Hydra's -ppn places ranks in blocks of Slots per worker, host by host
				// in hostfile order.
				total := int32(len(hosts)) * size.slots
				var want []string
				for i, host := range hosts {
					for k := range size.slots {
						want = append(want, fmt.Sprintf("%d of %d on %s", int32(i)*size.slots+k, total, host))
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("ranks Hydra started (-want +got):\n%s\nTrainer's hostfile:\n%s", diff, strings.Join(view.Hostfile, "\n"))
				}
			})
		}
	}
	if ran != 2 {
		t.Errorf("ran the launcher of %d Hydra runtimes, want 2 (MPICH and Intel MPI)", ran)
	}
}

// lookHydra finds MPICH's Hydra mpiexec.
func lookHydra(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("mpiexec.hydra")
	if err == nil {
		return path
	}
	msg := "MPICH's Hydra (mpiexec.hydra) is not installed: `make hydra` installs Debian's mpich"
	if os.Getenv(requireHydraEnv) != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// renderHydraJob renders a TrainJob that runs the rank-reporting program with the
// Trainer's runtime framework, as admission does, and returns the view and the
// Launcher's node container.
func renderHydraJob(t *testing.T, r *render.Renderer, rt *trainer.ClusterTrainingRuntime, numNodes, slots int32) (*render.JobView, *corev1.Container) {
	t.Helper()
	view := renderPublished(t, r, rt, &trainer.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: hydraJob},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: rt.Name},
			Trainer: &trainer.Trainer{
				NumNodes:       ptr.To(numNodes),
				NumProcPerNode: ptr.To(slots),
				Args:           []string{"sh", "-c", `echo "mpiguard-rank $PMI_RANK of $PMI_SIZE on $MPIR_CVAR_CH3_INTERFACE_HOSTNAME"`},
			},
		},
	})
	return view, nodeContainer(view.Launcher.PodTemplate.Spec)
}

// runLauncher runs the Launcher container's command line and environment with
// the hostfile in a temporary folder, Hydra as mpirun and its fork launcher, in
// a pod named self, and returns the rank lines sorted by rank.
func runLauncher(t *testing.T, hydra string, launcher *corev1.Container, hostfile []string, self string) []string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	must(t, os.MkdirAll(bin, 0o755))
	hf := filepath.Join(dir, "hostfile")
	must(t, os.WriteFile(hf, []byte(strings.Join(hostfile, "\n")+"\n"), 0o644))
	// mpirun is Hydra even where Open MPI's mpirun comes first on PATH (exec'd by
	// its full path: Hydra finds its proxy beside itself); the hostnames do not
	// resolve here, so getent says they do. hostname is the pod's; the FQDN
	// (-f), which only proxies started over SSH call back to, is unused by fork.
	must(t, os.WriteFile(filepath.Join(bin, "mpirun"), []byte("#!/bin/sh\nexec "+hydra+" \"$@\"\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(bin, "getent"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(bin, "hostname"), []byte("#!/bin/sh\n[ \"$1\" = -f ] && echo "+self+"."+hydraJob+".team-a.svc.cluster.local || echo "+self+"\n"), 0o755))
	setvars := filepath.Join(dir, "setvars.sh")
	must(t, os.WriteFile(setvars, []byte("# Intel oneAPI stand-in: Hydra is already on PATH\n"), 0o644))

	paths := strings.NewReplacer("/etc/mpi/hostfile", hf, "/tmp/mpiguard", filepath.Join(dir, "hydra"), "/opt/intel/oneapi/setvars.sh", setvars)
	var args []string
	for _, a := range append(append([]string{}, launcher.Command...), launcher.Args...) {
		args = append(args, paths.Replace(a))
	}
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	for _, e := range launcher.Env {
		if e.ValueFrom == nil {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	// Last wins: fork instead of the container's ssh.
	cmd.Env = append(env, "HYDRA_LAUNCHER=fork")
	cmd.WaitDelay = 5 * time.Second
	// Hydra forwards its stdin to rank 0's proxy. Given /dev/null, it writes
	// the end of input to a proxy that may have exited already, and dies of
	// SIGPIPE ("signal: broken pipe") once in a few dozen runs. A pipe that
	// stays open and silent until Hydra exits gives it nothing to forward.
	stdin, keepOpen, err := os.Pipe()
	must(t, err)
	defer func() { _ = keepOpen.Close() }()
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	_ = stdin.Close()
	if err != nil {
		t.Fatalf("launcher command failed: %v\n%s", err, out)
	}
	ranks := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		m := rankLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		rank, _ := strconv.Atoi(m[1])
		if _, dup := ranks[rank]; dup {
			t.Errorf("rank %d started twice:\n%s", rank, out)
		}
		ranks[rank] = fmt.Sprintf("%s of %s on %s", m[1], m[2], m[3])
	}
	got := make([]string, 0, len(ranks))
	for i := range len(ranks) {
		line, ok := ranks[i]
		if !ok {
			t.Fatalf("rank %d missing from Hydra's output:\n%s", i, out)
		}
		got = append(got, line)
	}
	return got
}
