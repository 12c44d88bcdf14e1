package diagnosis

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is where a followed job is.
type Phase string

// Phases of a followed job. A job the user suspended (no Kueue queue) is
// PhaseSuspended; one Kueue holds is PhaseWaiting.
const (
	PhaseWaiting   Phase = "waiting"
	PhaseRunning   Phase = "running"
	PhaseSucceeded Phase = "succeeded"
	PhaseFailed    Phase = "failed"
	PhaseSuspended Phase = "suspended"
)

// Reasons of the Events on a TrainJob, each with its section of
// docs/troubleshooting.md (Anchor).
const (
	ReasonUnschedulable     = "Unschedulable"
	ReasonJobsNotCreated    = "JobsNotCreated"
	ReasonGangWaiting       = "GangWaiting"
	ReasonQueuedByKueue     = "QueuedByKueue"
	ReasonImagePullFailed   = "ImagePullFailed"
	ReasonOOMKilled         = "OOMKilled"
	ReasonLauncherSSHFailed = "LauncherSSHFailed"
	ReasonLauncherFailed    = "LauncherFailed"
	ReasonWorkerFailed      = "WorkerFailed"
	ReasonEvicted           = "Evicted"
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	ReasonJobSetFailed      = "JobSetFailed"
)

// anchors are the sections of docs/troubleshooting.md, by Event reason.
var anchors = map[string]string{
	ReasonUnschedulable:     "unschedulable",
	ReasonJobsNotCreated:    "jobs-not-created",
	ReasonGangWaiting:       "gang-waiting",
	ReasonQueuedByKueue:     "queued-by-kueue",
	ReasonImagePullFailed:   "image-pull",
	ReasonOOMKilled:         "oomkilled",
	ReasonLauncherSSHFailed: "ssh",
	ReasonLauncherFailed:    "launcher-failed",
	ReasonWorkerFailed:      "worker-failed",
	ReasonEvicted:           "evicted",
	ReasonDeadlineExceeded:  "deadline-exceeded",
	ReasonDeadlineNear:      "deadline-near",
	ReasonJobSetFailed:      "jobset-failed",
}

// Reasons lists every Event reason, for the docs test and metrics.
func Reasons() []string {
	return []string{ReasonUnschedulable, ReasonJobsNotCreated, ReasonGangWaiting, ReasonQueuedByKueue, ReasonImagePullFailed,
		ReasonOOMKilled, ReasonLauncherSSHFailed, ReasonLauncherFailed, ReasonWorkerFailed, ReasonEvicted, ReasonDeadlineNear, ReasonDeadlineExceeded, ReasonJobSetFailed}
}

// Anchor is the reason's section of docs/troubleshooting.md
// ("docs/troubleshooting.md#ssh").
func Anchor(reason string) string { return "docs/troubleshooting.md#" + anchors[reason] }

// Observation is what the verdict on a user's MPI TrainJob depends on, read
// from the cluster.
type Observation struct {
	// Job and Namespace name the TrainJob (and its JobSet).
	Job, Namespace string
	Pods           Pods
	// ExpectedWorkers and ExpectedLaunchers are the pods the JobSet makes;
	// 0 while it does not exist.
	ExpectedWorkers, ExpectedLaunchers int32
	// Suspended is the TrainJob's spec.suspend; Queue its Kueue queue-name
	// label: a suspended job with a queue is Kueue's to hold.
	Suspended bool
	Queue     string
	// Workload is Kueue's Workload of the job, when it was read.
	Workload *Workload
	// Gang is the job's PodGroup, when it has one.
	Gang *Gang
	// Warnings are the Warning events on the JobSet and its Jobs.
	Warnings []Warning
	// FailedJobs are the JobSet's Jobs whose Failed condition is True.
	FailedJobs []JobFailure
	// JobSetFailed, TrainJobFailed and TrainJobComplete are those
	// conditions when True.
	JobSetFailed, TrainJobFailed, TrainJobComplete *metav1.Condition
	// Deadline is the TrainJob's maximum duration and when it began to
	// count (Max 0: none).
	Deadline Deadline
	// NetworkPolicyTemplate is the template of the job's mpiguard
	// NetworkPolicy ("" when it has none).
	NetworkPolicyTemplate string
}

// Workload is the state of the job's Kueue Workload.
type Workload struct {
	Name string
	// Admitted is its Admitted condition; Message why it is not.
	Admitted bool
	Message  string
}

// Gang is the job's PodGroup (scheduler-plugins coscheduling or Volcano).
type Gang struct {
	Kind, Name, Phase string
	// MinMember is how many pods must fit at once; Scheduled how many do.
	MinMember, Scheduled int32
}

// Finding is one reason to tell: an Event on the TrainJob.
type Finding struct {
	// Key is what it is about: the same failure keeps its key, so it is told
	// once; a waiting state keeps it while it holds, so it is repeated no
	// more often than the follower's interval.
	Key string
	// Type is corev1.EventTypeNormal or EventTypeWarning.
	Type, Reason, Message string
}

func finding(key, typ, reason, msg string) Finding {
	return Finding{Key: key, Type: typ, Reason: reason, Message: msg + "; see " + Anchor(reason)}
}

// Phase says where the job is.
func (o Observation) Phase() Phase {
	switch {
	case o.TrainJobComplete != nil:
		return PhaseSucceeded
	case o.TrainJobFailed != nil, o.JobSetFailed != nil:
		return PhaseFailed
	case o.Suspended && o.Queue == "":
		return PhaseSuspended
	case o.Suspended:
		return PhaseWaiting
	}
	if o.ExpectedWorkers == 0 || int32(len(o.Pods.Workers)) < o.ExpectedWorkers || int32(len(o.Pods.Launcher)) < o.ExpectedLaunchers {
		return PhaseWaiting
	}
	for _, p := range o.Pods.All() {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded {
			return PhaseWaiting
		}
	}
	return PhaseRunning
}

func (o Observation) missingPods() bool {
	return o.ExpectedWorkers == 0 || int32(len(o.Pods.Workers)) < o.ExpectedWorkers || int32(len(o.Pods.Launcher)) < o.ExpectedLaunchers
}

// Waiting says why a waiting job's pods do not run, nil when nothing holds
// them but time (pods being created, started, pulled).
func (o Observation) Waiting() *Finding {
	if o.Phase() != PhaseWaiting {
		return nil
	}
	if o.Suspended {
		msg := fmt.Sprintf("Kueue holds the job in LocalQueue %s: it is suspended until Kueue admits its Workload", o.Queue)
		if w := o.Workload; w != nil && !w.Admitted {
			msg = fmt.Sprintf("Kueue holds the job in LocalQueue %s: Workload %s is not admitted", o.Queue, w.Name)
			if w.Message != "" {
				msg += ": " + strings.TrimSuffix(w.Message, ".")
			}
		}
		msg += fmt.Sprintf(". It starts once its ClusterQueue has room; `kubectl get workloads -n %s` shows the queue", o.Namespace)
		f := finding("kueue", corev1.EventTypeNormal, ReasonQueuedByKueue, msg)
		return &f
	}
	if o.missingPods() {
		if r := WorstRefusal(o.Warnings); r != nil {
			f := finding("refused/"+r.Reason, corev1.EventTypeWarning, ReasonJobsNotCreated,
				fmt.Sprintf("the job's pods are not created: %s. %s", r.Summary(), refusalFix(r, o.Namespace)))
			return &f
		}
	}
	unschedulable := o.unschedulable()
	if g := o.Gang; g != nil && g.Phase != "" && g.Phase != "Running" && g.Phase != "Scheduled" && g.Phase != "Finished" {
		msg := fmt.Sprintf("the gang waits: %s %s is %s, %d of its %d pods scheduled: the scheduler starts the Launcher and Workers together or not at all",
			g.Kind, g.Name, g.Phase, g.Scheduled, g.MinMember)
		if unschedulable != "" {
			msg += "; " + unschedulable
		}
		msg += fmt.Sprintf(". `kubectl get %s -n %s %s -o yaml` shows it", strings.ToLower(g.Kind), o.Namespace, g.Name)
		f := finding("gang", corev1.EventTypeNormal, ReasonGangWaiting, msg)
		return &f
	}
	if unschedulable != "" {
		f := finding("unschedulable", corev1.EventTypeWarning, ReasonUnschedulable, unschedulable+
			fmt.Sprintf(". The nodes cannot hold them now: free what the scheduler names, ask for fewer or smaller Workers, or match the runtime's nodeSelector, affinity and tolerations to the nodes; `mpiguard explain %s/%s`", o.Namespace, o.Job))
		return &f
	}
	return nil
}

// unschedulable summarizes the pods the scheduler could not place: "4 of 6
// Workers unschedulable (Workers 2, 3, 4, 5): 0/8 nodes are available: 8
// Insufficient nvidia.com/gpu".
func (o Observation) unschedulable() string {
	var parts []string
	var workers []string
	var workerWhy string
	for i := range o.Pods.Workers {
		p := &o.Pods.Workers[i]
		if c := Unschedulable(p); c != nil {
			if n, ok := WorkerIndex(p); ok {
				workers = append(workers, fmt.Sprint(n))
			} else {
				workers = append(workers, p.Name)
			}
			if workerWhy == "" {
				workerWhy = SchedulerSummary(c.Message)
			}
		}
	}
	if len(workers) > 0 {
		total := max(int(o.ExpectedWorkers), len(o.Pods.Workers))
		parts = append(parts, fmt.Sprintf("%d of %d Workers unschedulable (Worker %s): %s", len(workers), total, strings.Join(workers, ", "), workerWhy))
	}
	for i := range o.Pods.Launcher {
		p := &o.Pods.Launcher[i]
		if c := Unschedulable(p); c != nil {
			parts = append(parts, fmt.Sprintf("the Launcher (pod %s) unschedulable: %s", p.Name, SchedulerSummary(c.Message)))
		}
	}
	return strings.Join(parts, "; ")
}

func refusalFix(r *Refusal, ns string) string {
	switch r.Reason {
	case "QuotaExceeded":
		return fmt.Sprintf("A ResourceQuota in namespace %s has no room for them (`kubectl describe resourcequota -n %s`): the Job controller retries; free quota, raise it, or ask for fewer Workers", ns, ns)
	case "PodSecurity":
		return fmt.Sprintf("Namespace %s enforces a Pod Security level (label pod-security.kubernetes.io/enforce) these pods do not meet: set what the message lists in the runtime's pod templates, or use a runtime that meets it", ns)
	case "SecurityContextConstraints":
		return "No SecurityContextConstraints the pods' service account may use admits them: use a runtime without a fixed runAsUser/fsGroup, or have an admin bind an SCC that admits them"
	}
	if r.Final {
		return "The apiserver refused them: fix what the message names, in the runtime or the namespace"
	}
	return "The controller retries"
}

// Failures are the reasons the job's pods or the job failed, each with a
// key that stays the same for the same failure.
func (o Observation) Failures() []Finding {
	var out []Finding
	for _, p := range o.Pods.All() {
		out = append(out, o.podFailures(&p)...)
	}
	if c := o.TrainJobFailed; c != nil && c.Reason == ReasonDeadlineExceeded {
		limit := "its spec.activeDeadlineSeconds"
		if d := o.Deadline.Max; d > 0 {
			limit += fmt.Sprintf(" (%s)", d)
		}
		out = append(out, finding("deadline/"+c.LastTransitionTime.UTC().Format(time.RFC3339), corev1.EventTypeWarning, ReasonDeadlineExceeded,
			fmt.Sprintf("the TrainJob ran longer than %s and its pods were stopped: %s. mpiguard's max-duration policy sets the deadline when the job gives none; ask for a longer one within the namespace's limit, or checkpoint and resume", limit, c.Message)))
	}
	if c := o.JobSetFailed; c != nil {
		msg := fmt.Sprintf("the JobSet failed (%s: %s)", c.Reason, c.Message)
		if first := o.firstFailedJob(); first != nil {
			role := first.ReplicatedJob
			switch role {
			case "launcher":
				role = "the Launcher's"
			case "node":
				role = "the Workers'"
			}
			msg += fmt.Sprintf(": %s Job %s failed first (%s: %s)", role, first.Job, first.Reason, first.Message)
		}
		msg += fmt.Sprintf(". The pods' own Events say why; `kubectl get jobs -n %s -l jobset.sigs.k8s.io/jobset-name=%s`", o.Namespace, o.Job)
		out = append(out, finding("jobset/"+c.LastTransitionTime.UTC().Format(time.RFC3339), corev1.EventTypeWarning, ReasonJobSetFailed, msg))
	}
	return out
}

func (o Observation) firstFailedJob() *JobFailure {
	var first *JobFailure
	for i := range o.FailedJobs {
		if first == nil || o.FailedJobs[i].At.Before(first.At) {
			first = &o.FailedJobs[i]
		}
	}
	return first
}

func (o Observation) podFailures(p *corev1.Pod) []Finding {
	var out []Finding
	name := Name(p)
	key := func(what string, parts ...any) string {
		return fmt.Sprintf("%s/%s%s", what, p.UID, fmt.Sprint(parts...))
	}
	if f := PullFailed(p); f != nil {
		out = append(out, finding(key("pull", "/", f.Container), corev1.EventTypeWarning, ReasonImagePullFailed,
			fmt.Sprintf("%s cannot pull image %s for container %s: %s: %s. Fix the image name or tag in the runtime or the TrainJob, or give the pods imagePullSecrets; `kubectl describe pod -n %s %s`",
				name, f.Image, f.Container, f.Reason, f.Message, o.Namespace, p.Name)))
	}
	if p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" {
		out = append(out, finding(key("evicted"), corev1.EventTypeWarning, ReasonEvicted,
			fmt.Sprintf("%s was evicted: %s. Its node ran short (memory, disk) or an admin drained it: give the pods requests equal to their limits, or ask an admin about the node", name, strings.TrimSuffix(p.Status.Message, "."))))
		return out
	}
	if p.Status.Phase == corev1.PodFailed && p.Status.Reason == ReasonDeadlineExceeded {
		out = append(out, finding(key("deadline"), corev1.EventTypeWarning, ReasonDeadlineExceeded,
			fmt.Sprintf("%s ran longer than its activeDeadlineSeconds: %s. Ask for a longer deadline, or checkpoint and resume", name, p.Status.Message)))
		return out
	}
	if p.DeletionTimestamp != nil {
		return out // stopped by the JobSet or a person: not a failure of its own
	}
	if t := OOMKilled(p); t != nil {
		limit := "no memory limit"
		if q, ok := ContainerLimit(p, t.Container, corev1.ResourceMemory); ok {
			limit = "limit " + q
		}
		out = append(out, finding(key("oom", "/", t.Container, "/", t.FinishedAt.Unix()), corev1.EventTypeWarning, ReasonOOMKilled,
			fmt.Sprintf("%s was OOMKilled: %s (container %s, exit code %d). Its processes need more memory than that: raise spec.trainer.resourcesPerNode.limits.memory, or use less per rank (batch size, Slots per worker)",
				name, limit, t.Container, t.ExitCode)))
		return out
	}
	t := Failed(p)
	if t == nil {
		return out
	}
	k := key("exit", "/", t.Container, "/", t.FinishedAt.Unix())
	why := fmt.Sprintf("container %s exited with code %d (%s)", t.Container, t.ExitCode, t.Reason)
	if Role(p) == RoleLauncher {
		if s := SSHFailed(t.Message); s != nil {
			whom := "a Worker"
			if s.Worker >= 0 {
				whom = fmt.Sprintf("Worker %d", s.Worker)
			}
			policy := "the job has no mpiguard NetworkPolicy"
			if o.NetworkPolicyTemplate != "" {
				policy = fmt.Sprintf("the job's NetworkPolicy template is `%s`", o.NetworkPolicyTemplate)
			}
			out = append(out, finding(k, corev1.EventTypeWarning, ReasonLauncherSSHFailed,
				fmt.Sprintf("the Launcher cannot reach %s over SSH: %s (%s: `%s`); %s. Check that %s's sshd listens on the runtime's SSH port (annotation mpiguard.io/network-policy-ssh-port) and that the policy lets the Launcher in: `kubectl get networkpolicy -n %s %s -o yaml`",
					whom, name, why, s.Line, policy, whom, o.Namespace, o.Job)))
			return out
		}
		line := FirstLine(t.Message)
		if line == "" {
			line = "it wrote no termination message"
		}
		out = append(out, finding(k, corev1.EventTypeWarning, ReasonLauncherFailed,
			fmt.Sprintf("%s failed: %s: %s. mpirun or the training program failed: `kubectl logs -n %s %s`", name, why, line, o.Namespace, p.Name)))
		return out
	}
	line := FirstLine(t.Message)
	if line != "" {
		line = ": " + line
	}
	out = append(out, finding(k, corev1.EventTypeWarning, ReasonWorkerFailed,
		fmt.Sprintf("%s failed: %s%s. The Launcher's mpirun loses its rank: `kubectl logs -n %s %s --previous`", name, why, line, o.Namespace, p.Name)))
	return out
}

// PodState says in a few words where a pod is, for `mpiguard explain`.
func PodState(p *corev1.Pod) string {
	switch {
	case p.DeletionTimestamp != nil:
		return "Terminating"
	case p.Status.Phase == corev1.PodFailed && p.Status.Reason != "":
		return fmt.Sprintf("Failed (%s): %s", p.Status.Reason, p.Status.Message)
	}
	if c := Unschedulable(p); c != nil {
		return "Pending, unschedulable: " + SchedulerSummary(c.Message)
	}
	if f := PullFailed(p); f != nil {
		return fmt.Sprintf("Pending, %s: image %s", f.Reason, f.Image)
	}
	if t := OOMKilled(p); t != nil {
		return fmt.Sprintf("%s, container %s OOMKilled (exit code %d)", p.Status.Phase, t.Container, t.ExitCode)
	}
	if t := Failed(p); t != nil {
		return fmt.Sprintf("%s, container %s exited with code %d (%s)", p.Status.Phase, t.Container, t.ExitCode, t.Reason)
	}
	if p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "" {
		return "Pending, not yet scheduled"
	}
	return string(p.Status.Phase)
}
