package mpi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// The TrainJob every case runs: the launcher and two Workers, two Slots per
// worker each, and a program that says which rank it is (Open MPI's or the PMI
// environment of Hydra) and where it runs.
const (
	namespace      = "team-a"
	jobName        = "mpi"
	numNodes       = 3
	slotsPerWorker = 2
	rankProgram    = `echo "mpiguard-rank ${OMPI_COMM_WORLD_RANK:-$PMI_RANK} of ${OMPI_COMM_WORLD_SIZE:-$PMI_SIZE} on $(hostname)"`
)

var rankLine = regexp.MustCompile(`^mpiguard-rank (\d+) of (\d+) on (\S+)$`)

// TestRanksOverSSH renders a TrainJob on each curated runtime with the
// Trainer's own controller code (JobSet, hostfile ConfigMap, SSH Secret,
// environment, commands), runs every rendered pod as real processes in its own
// network, mount and UTS namespaces on this machine, and checks that the
// launcher's mpirun started Slots per worker ranks on every Worker and on the
// launcher, the Workers' over SSH with the Trainer's key. Open MPI v1 and v2
// and DeepSpeed run Open MPI's mpirun; MPICH and Intel MPI run MPICH's Hydra
// (Intel's own build is not installable here: mpiImage says so).
//
// What is real: the Trainer's rendering; the pods' hostnames, their
// JobSet DNS names (in /etc/hosts) and IP addresses on a bridge; the Secret
// and ConfigMap volumes, with the Trainer's file modes and fsGroup ownership,
// mounted where the pod spec (sshAuthMountPath, /etc/mpi) says; the user,
// groups, no_new_privs and capability bounding set from the security
// contexts; the launcher waiting for the Workers' readiness probe (dependsOn
// Ready); the containers' commands, args and env as rendered; Debian's sshd
// (non-root, as the Workers' command says), ssh, Open MPI's mpirun and orted.
//
// What is substituted, because there is no registry or container engine here:
// the images. substitutes and mpiImage say what is reproduced of each (the
// SSH configurations and port 2222, the mpiuser account, sshd's file
// capability, which MPI mpirun is);
// the binaries are this machine's Debian bookworm builds, and the ranks run
// sh, not Python. Cluster DNS is /etc/hosts; seccomp profiles, cgroups and
// resource limits are not applied.
//
// Each breakage below must make the run fail, for its own reason, so the
// test's power to catch them is re-checked on every run.
func TestRanksOverSSH(t *testing.T) {
	requireRealMPI(t)
	published, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*trainer.ClusterTrainingRuntime{}
	var versions []*trainer.ClusterTrainingRuntime
	for _, rt := range published {
		byName[rt.Name] = rt
		// Every version once: aliases copy one, gang variants only add a scheduler.
		if rt.Labels[catalog.LabelAlias] == "" && rt.Labels[catalog.LabelGangScheduler] == "" {
			versions = append(versions, rt)
		}
	}
	if len(versions) != 5 {
		t.Errorf("ran %d curated runtime versions, want 5 (openmpi v1 and v2, deepspeed, mpich, intelmpi)", len(versions))
	}
	for _, rt := range versions {
		t.Run(rt.Name, func(t *testing.T) {
			t.Parallel()
			if err := launch(t, rt, nil, ""); err != nil {
				t.Error(err)
			}
		})
	}

	breakages := []struct {
		name string
		// base is the curated runtime broken; mpiguard-openmpi if empty.
		base string
		// runtime breaks the runtime before the Trainer renders it; rendered
		// breaks what it rendered.
		runtime  func(*testing.T, *trainer.ClusterTrainingRuntime)
		rendered func(*rendered)
		// wantErr is in the failure: the run fails for this breakage's reason.
		wantErr string
		// hangs: the broken launcher never exits (Hydra waits for its proxies
		// forever, MPIEXEC_TIMEOUT or not), so the run ends once the launcher
		// has printed wantErr.
		hangs bool
	}{{
		name: "hostfile without the last Worker",
		rendered: func(r *rendered) {
			hf := r.configMaps[jobName+constants.MPIHostfileConfigMapSuffix]
			lines := strings.SplitAfter(hf[constants.MPIHostfileName], "\n")
			hf[constants.MPIHostfileName] = strings.Join(append(lines[:1], lines[2:]...), "")
		},
		wantErr: "mpirun started these ranks",
	}, {
		name: "hostfile with one slot per host",
		rendered: func(r *rendered) {
			hf := r.configMaps[jobName+constants.MPIHostfileConfigMapSuffix]
			hf[constants.MPIHostfileName] = strings.ReplaceAll(hf[constants.MPIHostfileName], "slots="+strconv.Itoa(slotsPerWorker), "slots=1")
		},
		wantErr: "mpirun started these ranks",
	}, {
		name: "SSH keys at the Trainer's default sshAuthMountPath /root/.ssh",
		runtime: func(_ *testing.T, rt *trainer.ClusterTrainingRuntime) {
			rt.Spec.MLPolicy.MPI.SSHAuthMountPath = ptr.To("/root/.ssh")
		},
		wantErr: "no hostkeys available",
	}, {
		name: "launcher without the SSH key mount",
		rendered: func(r *rendered) {
			for i := range r.pods {
				if r.pods[i].replicatedJob != constants.Launcher {
					continue
				}
				c := &r.pods[i].spec.Containers[0]
				c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
					return m.Name == constants.MPISSHAuthVolumeName
				})
			}
		},
		wantErr: "Permission denied (publickey",
	}, {
		name: "Workers' sshd on port 2223 (readiness probe with it)",
		runtime: func(t *testing.T, rt *trainer.ClusterTrainingRuntime) {
			c := workerContainer(t, rt)
			c.Args = append(c.Args, "-p", "2223")
			c.ReadinessProbe.TCPSocket.Port = intstr.FromInt32(2223)
		},
		wantErr: "port 2222: Connection refused",
	}, {
		name: "Workers' capabilities without NET_BIND_SERVICE (the image's sshd has it as a file capability)",
		runtime: func(t *testing.T, rt *trainer.ClusterTrainingRuntime) {
			c := workerContainer(t, rt)
			if c.SecurityContext == nil {
				c.SecurityContext = &corev1.SecurityContext{}
			}
			c.SecurityContext.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
		},
		wantErr: "Operation not permitted",
	}, {
		// Hydra starts a proxy locally only for a host named exactly as
		// gethostname() says; for <hostname>.<subdomain> it runs ssh to the
		// launcher itself, where no sshd listens.
		name: "Hydra launcher keeping its own hostfile line as the Trainer writes it (<hostname>.<subdomain>)",
		base: "mpiguard-mpich",
		runtime: func(t *testing.T, rt *trainer.ClusterTrainingRuntime) {
			editLauncherScript(t, rt, "{h = self; own++}", "{own++}")
		},
		hangs:   true,
		wantErr: jobName + "-" + constants.Launcher + "-0-0." + jobName + " port 2222: Connection refused",
	}, {
		// Without -localhost, Hydra's proxies call back to the launcher's bare
		// hostname, which the Workers cannot resolve: neither /etc/hosts here
		// nor a pod's DNS search path has the JobSet's subdomain.
		name: "Hydra launcher without -localhost (Workers call back to its bare hostname)",
		base: "mpiguard-mpich",
		runtime: func(t *testing.T, rt *trainer.ClusterTrainingRuntime) {
			editLauncherScript(t, rt, ` -localhost "$fqdn"`, "")
		},
		hangs:   true,
		wantErr: "unable to get host address for " + jobName + "-" + constants.Launcher + "-0-0\n",
	}}
	for _, b := range breakages {
		t.Run("broken/"+b.name, func(t *testing.T) {
			t.Parallel()
			base := "mpiguard-openmpi"
			if b.base != "" {
				base = b.base
			}
			rt := byName[base].DeepCopy()
			if b.runtime != nil {
				b.runtime(t, rt)
			}
			var giveUpOn string
			if b.hangs {
				giveUpOn = b.wantErr
			}
			err := launch(t, rt, b.rendered, giveUpOn)
			if err == nil {
				t.Fatalf("mpirun started every rank on every host with %s; the test must catch this", b.name)
			}
			if !strings.Contains(err.Error(), b.wantErr) {
				t.Fatalf("failed, but not for this breakage (want %q in the failure):\n%v", b.wantErr, err)
			}
			t.Logf("fails as it must: %.300s", err)
		})
	}
}

// launch renders the TrainJob on rt, applies breakRendered (if any), runs its
// pods until the launcher exits (or, if giveUpOn is set, has printed it), and
// checks the ranks. An error says what went wrong.
func launch(t *testing.T, rt *trainer.ClusterTrainingRuntime, breakRendered func(*rendered), giveUpOn string) error {
	r := renderWithTrainer(t, rt, rankJob(rt))
	if len(r.pods) != numNodes {
		return fmt.Errorf("the Trainer rendered %d pods for numNodes %d", len(r.pods), numNodes)
	}
	if breakRendered != nil {
		breakRendered(r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k := newKubelet(t, r, namespace)
	if giveUpOn != "" {
		go k.cancelOnOutput(ctx, cancel, constants.Launcher, giveUpOn)
	}
	out, err := k.run(ctx)
	if err != nil {
		return err
	}
	// Every pod runs Slots per worker ranks (the launcher too:
	// runLauncherAsNode). The order is the MPI's own: Open MPI's mpirun puts
	// its own host first (ranks 0 and 1 on the launcher), Hydra follows the
	// hostfile (the launcher last).
	want := rankPlacement{PerHost: map[string]int{}}
	for _, p := range k.pods {
		want.PerHost[p.hostname] = slotsPerWorker
	}
	if diff := cmp.Diff(want, placed(out, numNodes*slotsPerWorker)); diff != "" {
		return fmt.Errorf("mpirun started these ranks (-want +got):\n%s\nhostfile:\n%slauncher output:\n%s", diff, r.hostfile(t, jobName), out)
	}
	// The Workers' ranks came through their sshd, with the Trainer's key.
	for _, p := range k.pods {
		if p.replicatedJob == constants.Launcher {
			continue
		}
		if log := p.out.String(); !strings.Contains(log, "Accepted publickey for "+mpiuser.name) {
			return fmt.Errorf("Worker %s's sshd accepted no public key for %s:\n%s", p.hostname, mpiuser.name, log)
		}
	}
	return nil
}

// rankJob is the TrainJob every case runs on rt.
func rankJob(rt *trainer.ClusterTrainingRuntime) *trainer.TrainJob {
	return &trainer.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: jobName, UID: "0a1b2c3d"},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: rt.Name},
			Trainer: &trainer.Trainer{
				NumNodes:       ptr.To[int32](numNodes),
				NumProcPerNode: ptr.To[int32](slotsPerWorker),
				Args:           []string{"sh", "-c", rankProgram},
			},
		},
	}
}

// rankPlacement is where the ranks ran: how many on each host, and what is wrong
// with the ranks as a whole (missing, repeated, another world size).
type rankPlacement struct {
	PerHost  map[string]int
	Problems []string
}

// placed reads the rank lines of out (in any order) for a world of size ranks.
func placed(out string, size int) rankPlacement {
	got := rankPlacement{PerHost: map[string]int{}}
	seen := map[int]bool{}
	for _, line := range strings.Split(out, "\n") {
		m := rankLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		rank, _ := strconv.Atoi(m[1])
		got.PerHost[m[3]]++
		if seen[rank] {
			got.Problems = append(got.Problems, fmt.Sprintf("rank %d started twice", rank))
		}
		seen[rank] = true
		if m[2] != strconv.Itoa(size) {
			got.Problems = append(got.Problems, fmt.Sprintf("rank %d is in a world of %s ranks, want %d", rank, m[2], size))
		}
	}
	for rank := range size {
		if !seen[rank] {
			got.Problems = append(got.Problems, fmt.Sprintf("rank %d never started", rank))
		}
	}
	return got
}

// editLauncherScript replaces old by new in the launcher's shell script (its
// command's third word).
func editLauncherScript(t *testing.T, rt *trainer.ClusterTrainingRuntime, old, replacement string) {
	t.Helper()
	for i, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
		if rj.Name != constants.Launcher {
			continue
		}
		c := &rt.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.Containers[0]
		if len(c.Command) < 3 || !strings.Contains(c.Command[2], old) {
			t.Fatalf("%s's launcher script has no %q to break: %q", rt.Name, old, c.Command)
		}
		c.Command[2] = strings.Replace(c.Command[2], old, replacement, 1)
		return
	}
	t.Fatalf("%s has no %s job", rt.Name, constants.Launcher)
}

// workerContainer returns the node container of the runtime's Workers.
func workerContainer(t *testing.T, rt *trainer.ClusterTrainingRuntime) *corev1.Container {
	t.Helper()
	for i, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
		if rj.Name != constants.Node {
			continue
		}
		cs := rt.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.Containers
		for j := range cs {
			if cs[j].Name == constants.Node {
				return &cs[j]
			}
		}
	}
	t.Fatalf("%s has no %s container in a %s job", rt.Name, constants.Node, constants.Node)
	return nil
}

// requireMPIEnv makes no root, no network namespaces or a missing sshd, Open
// MPI or Hydra a failure instead of a skip; `make test` sets it after
// installing them (make hydra mpi).
const requireMPIEnv = "MPIGUARD_REQUIRE_REAL_MPI"

// requireRealMPI skips, or fails when requireMPIEnv is set, unless the test
// can make network namespaces (root) and every program it runs is there.
func requireRealMPI(t *testing.T) {
	t.Helper()
	skip := t.Skip
	if os.Getenv(requireMPIEnv) != "" {
		skip = t.Fatal
	}
	if os.Geteuid() != 0 {
		skip("runs pods in network and mount namespaces: needs root (CI runs it as root)")
	}
	var missing []string
	for _, prog := range []string{"/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/mpirun.openmpi", "/usr/bin/orted",
		"/usr/bin/mpirun.mpich", "/usr/bin/hydra_pmi_proxy", "ip", "setpriv", "unshare", "bash", "hostname"} {
		if _, err := exec.LookPath(prog); err != nil {
			missing = append(missing, prog)
		}
	}
	if len(missing) > 0 {
		skip(fmt.Sprintf("missing %v: `make hydra mpi` installs Debian's mpich, openssh-server, openmpi-bin and iproute2", missing))
	}
	probe := netnsName()
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		skip(fmt.Sprintf("cannot create network namespaces here (ip netns add: %v: %s)", err, strings.TrimSpace(string(out))))
	}
	_ = exec.Command("ip", "netns", "del", probe).Run()
}
