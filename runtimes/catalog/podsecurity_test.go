package catalog

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/internal/podsecurity"
	"github.com/mpiguard/mpiguard/internal/render"
)

// TestPodsMeetRestricted renders a TrainJob on every published runtime, for
// both platforms, with the Trainer's own framework (the SSH key Secret and
// hostfile ConfigMap volumes it adds included) and judges the pods with the
// apiserver's Pod Security checks in a namespace enforcing "restricted": none
// may fail, or mpiguard's own runtimes would be denied there (and their pods
// refused without mpiguard).
func TestPodsMeetRestricted(t *testing.T) {
	r, err := render.NewRenderer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	restricted := map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	for _, p := range Platforms {
		rts, err := LoadFor(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range rts {
			t.Run(string(p)+"/"+rt.Name, func(t *testing.T) {
				view := renderPublished(t, r, rt, &trainer.TrainJob{
					ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "psa"},
					Spec: trainer.TrainJobSpec{
						RuntimeRef: trainer.RuntimeRef{Name: rt.Name},
						Trainer:    &trainer.Trainer{NumNodes: ptr.To[int32](3), Args: []string{"python", "train.py"}},
					},
				})
				var pods []podsecurity.Pod
				for i := range view.ReplicatedJobs {
					rj := &view.ReplicatedJobs[i]
					pods = append(pods, podsecurity.Pod{ReplicatedJob: rj.Name, Role: string(rj.Role), Field: rj.Name, Template: &rj.PodTemplate})
				}
				if got := podsecurity.Evaluate(restricted, pods).Enforce.Violations; len(got) != 0 {
					t.Errorf("pods fail Pod Security \"restricted\": %+v", got)
				}
			})
		}
	}
}

// TestOpenShiftFlavour: the same runtimes, names and pods, without a fixed
// UID, GID or fsGroup (OpenShift's restricted-v2 SCC assigns them from the
// project's range and refuses any other), labelled for the platform.
func TestOpenShiftFlavour(t *testing.T) {
	kube, err := LoadFor(PlatformKubernetes)
	if err != nil {
		t.Fatal(err)
	}
	osh, err := LoadFor(PlatformOpenShift)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Names(kube), Names(osh)); diff != "" {
		t.Errorf("OpenShift publishes other names (-kubernetes +openshift):\n%s", diff)
	}
	for i, rt := range osh {
		if rt.Labels[LabelPlatform] != string(PlatformOpenShift) {
			t.Errorf("%s: label %s = %q, want openshift", rt.Name, LabelPlatform, rt.Labels[LabelPlatform])
		}
		if _, ok := kube[i].Labels[LabelPlatform]; ok {
			t.Errorf("%s (kubernetes) carries %s", kube[i].Name, LabelPlatform)
		}
		// Put the fixed IDs back: nothing else may differ.
		back := rt.DeepCopy()
		delete(back.Labels, LabelPlatform)
		for j, rj := range back.Spec.Template.Spec.ReplicatedJobs {
			pod := &rj.Template.Spec.Template.Spec
			if sc := pod.SecurityContext; sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.FSGroup != nil {
				t.Errorf("%s/%s: pod securityContext pins an ID: %+v", rt.Name, rj.Name, sc)
			}
			for _, c := range pod.Containers {
				if sc := c.SecurityContext; sc != nil && (sc.RunAsUser != nil || sc.RunAsGroup != nil) {
					t.Errorf("%s/%s/%s: container securityContext pins an ID: %+v", rt.Name, rj.Name, c.Name, sc)
				}
			}
			want := kube[i].Spec.Template.Spec.ReplicatedJobs[j].Template.Spec.Template.Spec.SecurityContext
			pod.SecurityContext.RunAsUser, pod.SecurityContext.FSGroup = want.RunAsUser, want.FSGroup
		}
		if diff := cmp.Diff(kube[i], back); diff != "" {
			t.Errorf("%s: the flavours differ beyond UID and fsGroup (-kubernetes +openshift):\n%s", rt.Name, diff)
		}
	}
	if err := Platform("gke").Validate(); err == nil {
		t.Error("an unknown platform validates")
	}
}

// TestSSHDExecutesWithTheWorkersCapabilities runs a binary carrying the file
// capability the mpioperator images put on /usr/sbin/sshd
// (cap_net_bind_service+eip) as a non-root user under each Worker container's
// capabilities (bounding set: drop, then add) with no_new_privs
// (allowPrivilegeEscalation: false), as the container runtime starts it. The
// kernel refuses to execute a binary whose file capabilities the bounding set
// lacks: with a plain "drop: [ALL]" the Workers' sshd would never start.
func TestSSHDExecutesWithTheWorkersCapabilities(t *testing.T) {
	setcap, err1 := exec.LookPath("setcap")
	setpriv, err2 := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err1 != nil || err2 != nil {
		t.Skip("needs root, setcap and setpriv (util-linux, libcap2-bin)")
	}
	dir, err := os.MkdirTemp("", "sshd-caps")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	must(t, os.Chmod(dir, 0o755))
	sshd := filepath.Join(dir, "sshd")
	must(t, copyFile("/bin/true", sshd))
	if out, err := exec.Command(setcap, "cap_net_bind_service=+eip", sshd).CombinedOutput(); err != nil {
		t.Skipf("file capabilities unsupported here: %v %s", err, out)
	}
	run := func(sc *corev1.SecurityContext) error {
		bounding := "-all"
		for _, c := range sc.Capabilities.Add {
			bounding += ",+" + strings.ToLower(string(c))
		}
		args := []string{"--reuid=1000", "--regid=1000", "--clear-groups", "--inh-caps=-all", "--bounding-set=" + bounding}
		if !ptr.Deref(sc.AllowPrivilegeEscalation, true) {
			args = append(args, "--no-new-privs")
		}
		return exec.Command(setpriv, append(args, sshd)...).Run()
	}
	// The check itself: a bare drop of everything cannot start it.
	if err := run(&corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}); err == nil {
		t.Skip("a file-capability binary executed with an empty bounding set (a nosuid mount?): the failure the test guards against cannot be shown here")
	}
	tpls, err := Templates()
	if err != nil {
		t.Fatal(err)
	}
	for _, tpl := range tpls {
		worker := tpl.Runtime.Spec.Template.Spec.ReplicatedJobs[0]
		c := nodeContainer(worker.Template.Spec.Template.Spec)
		if !strings.Contains(c.Image, "mpioperator/") {
			continue // only mpioperator/base images setcap sshd
		}
		t.Run(tpl.File, func(t *testing.T) {
			if !slices.Contains(c.Command, "/usr/sbin/sshd") {
				t.Fatalf("the Worker does not run sshd: %v", c.Command)
			}
			if err := run(c.SecurityContext); err != nil {
				t.Errorf("sshd (cap_net_bind_service+eip) cannot execute under the Worker's securityContext %+v: %v", c.SecurityContext, err)
			}
		})
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}
