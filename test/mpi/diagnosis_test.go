package mpi

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/diagnosis"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// The kubelet's FallbackToLogsOnError: a container that failed without a
// termination message gets its log's last lines, at most this many lines and
// bytes (k8s.io/kubernetes/pkg/kubelet/container,
// MaxContainerTerminationMessageLogLines and ...LogLength).
const (
	terminationLogLines = 80
	terminationLogBytes = 2048
)

// TestClosedWorkerSSHPortNamedBySSH runs the curated OpenMPI runtime with
// Worker 1's sshd listening on another port than the one the Launcher's
// mpirun dials (its port closed), as a NetworkPolicy that drops the
// Launcher's connections does to the Launcher. The real mpirun fails; its
// real output becomes the Launcher's termination message as the kubelet makes
// it under the runtime's terminationMessagePolicy, and the classifier the
// follower uses (internal/diagnosis) must say the Launcher cannot reach
// Worker 1 over SSH and name the job's NetworkPolicy template.
func TestClosedWorkerSSHPortNamedBySSH(t *testing.T) {
	requireRealMPI(t)
	published, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	var rt *trainer.ClusterTrainingRuntime
	for _, r := range published {
		if r.Name == "mpiguard-openmpi" {
			rt = r.DeepCopy()
		}
	}
	if rt == nil {
		t.Fatal("no curated runtime mpiguard-openmpi")
	}
	r := renderWithTrainer(t, rt, rankJob(rt))
	closed := jobName + "-" + constants.Node + "-0-1"
	found := false
	for i := range r.pods {
		if r.pods[i].hostname != closed {
			continue
		}
		found = true
		c := &r.pods[i].spec.Containers[0]
		c.Args = append(c.Args, "-p", "2223")
		c.ReadinessProbe.TCPSocket.Port = intstr.FromInt32(2223)
	}
	if !found {
		t.Fatalf("no Worker pod %s among the rendered pods", closed)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k := newKubelet(t, r, namespace)
	out, err := k.run(ctx)
	if err == nil {
		t.Fatalf("mpirun succeeded with Worker 1's SSH port closed:\n%s", out)
	}
	launcher := k.podsOf(constants.Launcher)[0]
	var exit *exec.ExitError
	if !errors.As(launcher.err, &exit) {
		t.Fatalf("the Launcher did not exit with a code: %v\n%s", launcher.err, out)
	}
	c := launcher.spec.Containers[0]
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: launcher.hostname + "-x7k2q", UID: "launcher-uid",
			Labels: map[string]string{jobsetv1alpha2.ReplicatedJobNameKey: constants.Launcher, jobsetv1alpha2.JobSetNameKey: jobName}},
		Spec: launcher.spec,
		Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: c.Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: int32(exit.ExitCode()), Reason: "Error", Message: terminationMessage(c, out), FinishedAt: metav1.NewTime(time.Now())}}}}},
	}
	o := diagnosis.Observation{Job: jobName, Namespace: namespace, ExpectedLaunchers: 1, ExpectedWorkers: numNodes - 1,
		Pods: diagnosis.Pods{Launcher: []corev1.Pod{pod}}, NetworkPolicyTemplate: "ingress-isolated"}
	var got *diagnosis.Finding
	for _, f := range o.Failures() {
		if f.Reason == diagnosis.ReasonLauncherSSHFailed || f.Reason == diagnosis.ReasonLauncherFailed {
			got = &f
		}
	}
	if got == nil {
		t.Fatalf("no Launcher failure found in its termination message %q", pod.Status.ContainerStatuses[0].State.Terminated.Message)
	}
	for _, want := range []string{
		"the Launcher cannot reach Worker 1 over SSH: Launcher (pod " + pod.Name + ")",
		"`ssh: connect to host " + closed + "." + jobName + " port 2222: Connection refused`",
		"the job's NetworkPolicy template is `ingress-isolated`",
		"see docs/troubleshooting.md#ssh",
	} {
		if got.Reason != diagnosis.ReasonLauncherSSHFailed || !strings.Contains(got.Message, want) {
			t.Errorf("the follower would say %s: %s\nwant %s naming %q; the Launcher's output:\n%s", got.Reason, got.Message, diagnosis.ReasonLauncherSSHFailed, want, out)
		}
	}
	t.Logf("the follower says: %s %s: %s", got.Type, got.Reason, got.Message)
}

// terminationMessage is the Launcher's termination message as the kubelet
// makes it from its output, under its container's terminationMessagePolicy
// (nothing writes /dev/termination-log): the log's tail with
// FallbackToLogsOnError, nothing with File (the default).
func terminationMessage(c corev1.Container, log string) string {
	if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		return ""
	}
	lines := strings.SplitAfter(strings.TrimSuffix(log, "\n"), "\n")
	if len(lines) > terminationLogLines {
		lines = lines[len(lines)-terminationLogLines:]
	}
	tail := strings.Join(lines, "")
	if len(tail) > terminationLogBytes {
		tail = tail[len(tail)-terminationLogBytes:]
	}
	return tail
}
