package diagnosis

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// Roles of an MPI TrainJob's pods, as the project names them.
const (
	RoleLauncher = "Launcher"
	RoleWorker   = "Worker"
)

// Pods are an MPI TrainJob's pods by role.
type Pods struct {
	Launcher, Workers []corev1.Pod
}

// ByRole sorts pods of one JobSet into Launcher and Workers by their
// replicated job (the Trainer's "launcher" and "node"); others are dropped.
// Workers are ordered by index.
func ByRole(pods []corev1.Pod) Pods {
	var out Pods
	for _, p := range pods {
		switch p.Labels[jobsetv1alpha2.ReplicatedJobNameKey] {
		case trainerconstants.Launcher:
			out.Launcher = append(out.Launcher, p)
		case trainerconstants.Node:
			out.Workers = append(out.Workers, p)
		}
	}
	sort.SliceStable(out.Workers, func(i, j int) bool {
		a, _ := WorkerIndex(&out.Workers[i])
		b, _ := WorkerIndex(&out.Workers[j])
		return a < b
	})
	return out
}

// All is the Workers then the Launcher.
func (p Pods) All() []corev1.Pod {
	return append(append([]corev1.Pod{}, p.Workers...), p.Launcher...)
}

// Role is the pod's role, "" when it is neither Launcher nor Worker.
func Role(p *corev1.Pod) string {
	switch p.Labels[jobsetv1alpha2.ReplicatedJobNameKey] {
	case trainerconstants.Launcher:
		return RoleLauncher
	case trainerconstants.Node:
		return RoleWorker
	}
	return ""
}

// WorkerIndex is a Worker pod's index: its completion index in the indexed
// Job of the "node" replicated job, which is also the N of its hostname
// <job>-node-0-N.
func WorkerIndex(p *corev1.Pod) (int, bool) {
	v, ok := p.Labels[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = p.Annotations[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return -1, false
	}
	i, err := strconv.Atoi(v)
	return i, err == nil
}

// Name says which pod, by role and index: "Worker 2 (pod t-node-0-2-x7k)",
// "Launcher (pod t-launcher-0-0-q2w)".
func Name(p *corev1.Pod) string {
	switch Role(p) {
	case RoleLauncher:
		return fmt.Sprintf("Launcher (pod %s)", p.Name)
	case RoleWorker:
		if i, ok := WorkerIndex(p); ok {
			return fmt.Sprintf("Worker %d (pod %s)", i, p.Name)
		}
		return fmt.Sprintf("Worker (pod %s)", p.Name)
	}
	return "pod " + p.Name
}

// PodCondition is the pod's condition of type t, nil when it has none.
func PodCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// ContainerStatus is the status of the pod's container name, nil when none.
func ContainerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// ContainerLimit is the container's limit of r, as written.
func ContainerLimit(p *corev1.Pod, container string, r corev1.ResourceName) (string, bool) {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			if q, ok := c.Resources.Limits[r]; ok {
				return q.String(), true
			}
		}
	}
	return "", false
}

// Unschedulable is the scheduler's PodScheduled=False condition of a pod it
// could not place, nil otherwise.
func Unschedulable(p *corev1.Pod) *corev1.PodCondition {
	if c := PodCondition(p, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
		return c
	}
	return nil
}

// SchedulerSummary keeps the scheduler's verdict of an Unschedulable
// condition, its first sentence, and drops what follows (DRA's claims,
// preemption): "0/8 nodes are available: 8 Insufficient nvidia.com/gpu".
func SchedulerSummary(message string) string {
	if i := strings.Index(message, ". "); i > 0 {
		message = message[:i]
	}
	return strings.TrimSuffix(strings.TrimSpace(message), ".")
}

// PullFailure is a container whose image the kubelet cannot pull.
type PullFailure struct {
	Container, Image, Reason, Message string
	// Final: the kubelet has given up for now (back-off) or never will.
	Final bool
}

var pullFailures = map[string]bool{"ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// finalPullFailures: the kubelet has given up for now or never will.
var finalPullFailures = map[string]bool{"ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// PullFailed is the first container (init containers first) of p whose image
// cannot be pulled, nil when none.
func PullFailed(p *corev1.Pod) *PullFailure {
	for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := st.State.Waiting; w != nil && pullFailures[w.Reason] {
			return &PullFailure{Container: st.Name, Image: st.Image, Reason: w.Reason, Message: w.Message, Final: finalPullFailures[w.Reason]}
		}
	}
	return nil
}

// Termination is a container's end.
type Termination struct {
	Container string
	*corev1.ContainerStateTerminated
	// Restarts is the container's restart count when it was seen.
	Restarts int32
}

// OOMKilled is the first container of p the kernel killed for its memory
// limit, now or before its last restart; nil when none.
func OOMKilled(p *corev1.Pod) *Termination {
	for _, st := range p.Status.ContainerStatuses {
		for _, t := range []*corev1.ContainerStateTerminated{st.State.Terminated, st.LastTerminationState.Terminated} {
			if t != nil && t.Reason == "OOMKilled" {
				return &Termination{Container: st.Name, ContainerStateTerminated: t, Restarts: st.RestartCount}
			}
		}
	}
	return nil
}

// Failed is the first container of p that ended with a non-zero exit code,
// now or before its last restart; nil when none.
func Failed(p *corev1.Pod) *Termination {
	for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		for _, t := range []*corev1.ContainerStateTerminated{st.State.Terminated, st.LastTerminationState.Terminated} {
			if t != nil && t.ExitCode != 0 {
				return &Termination{Container: st.Name, ContainerStateTerminated: t, Restarts: st.RestartCount}
			}
		}
	}
	return nil
}

// TerminationMessage is what the Launcher's container ("node") wrote to its
// termination message, else the reason it ended; "" while it runs.
func TerminationMessage(p *corev1.Pod) string {
	if st := ContainerStatus(p, trainerconstants.Node); st != nil && st.State.Terminated != nil {
		if m := strings.TrimSpace(st.State.Terminated.Message); m != "" {
			return m
		}
		return st.State.Terminated.Reason
	}
	return ""
}

// DistinctLines are the non-blank lines of s, trimmed, each once, sorted.
func DistinctLines(s string) []string {
	set := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			set[l] = true
		}
	}
	out := make([]string, 0, len(set))
	for l := range set {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}
