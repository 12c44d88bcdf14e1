package smoketest

import (
	"fmt"
	"strings"
	"time"

	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/diagnosis"
)

// Observation is everything the verdict depends on, read from the cluster.
type Observation struct {
	// Launcher and Workers are the smoke-test TrainJob's pods by replicated job.
	Launcher []corev1.Pod
	Workers  []corev1.Pod
	// ExpectedWorkers is the number of Worker pods the TrainJob creates.
	ExpectedWorkers int32
	// HostsExpected is the number of lines of the TrainJob's hostfile.
	HostsExpected int32
	// TrainJobFailed is the TrainJob's Failed condition when it is True.
	TrainJobFailed *metav1.Condition
	// JobSetFailed is the JobSet's Failed condition when it is True (the
	// Trainer copies it to the TrainJob, a moment later).
	JobSetFailed *metav1.Condition
	// FailedJobs are the JobSet's Jobs whose Failed condition is True: they say
	// why (BackoffLimitExceeded, DeadlineExceeded, a podFailurePolicy rule)
	// where the JobSet only says that one failed.
	FailedJobs []JobFailure
	// Warnings are the Warning events on the JobSet and its Jobs. Pods the
	// apiserver refuses to create leave no object behind: the Job controller's
	// FailedCreate (and the JobSet controller's JobCreationFailed) is all there is.
	Warnings []Warning
	// Namespace is the smoke test's, for the advice in messages.
	Namespace  string
	Start, Now time.Time
	Timeout    time.Duration
}

// Warning is one Warning event about the smoke-test JobSet or one of its Jobs.
type Warning = diagnosis.Warning

// JobFailure is a Job's Failed condition.
type JobFailure = diagnosis.JobFailure

// Verdict is the conditions derived from an Observation.
type Verdict struct {
	// Conditions holds the five progress conditions, plus Succeeded once Final.
	Conditions []metav1.Condition
	Final      bool
	HostsSeen  int32
}

// Evaluate turns what the pods show into RuntimeTest conditions. It is pure: the
// controller reads the cluster, Evaluate decides.
func Evaluate(o Observation) Verdict {
	v := Verdict{}
	scheduled := o.podsScheduled()
	refused := o.creationRefused()
	if refused != nil {
		scheduled = metav1.Condition{Type: api.ConditionPodsScheduled, Status: metav1.ConditionFalse, Reason: refused.reason, Message: refused.message}
	}
	pulled, pullFailure := o.imagesPulled()
	ssh := o.sshReady()
	spawned, exitCode, hostsSeen, launcherPod := o.mpiSpawned()
	v.HostsSeen = hostsSeen
	v.Conditions = []metav1.Condition{
		{Type: api.ConditionJobCreated, Status: metav1.ConditionTrue, Reason: api.ReasonCreated, Message: "the smoke-test TrainJob exists"},
		scheduled, pulled, ssh, spawned,
	}

	fail := func(reason, msg string) Verdict {
		v.Final = true
		v.Conditions = append(v.Conditions, metav1.Condition{Type: api.ConditionSucceeded, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
		return v
	}
	if pod, t := o.oomKilled(); pod != nil {
		limit := "no memory limit"
		if q, ok := diagnosis.ContainerLimit(pod, t.Container, corev1.ResourceMemory); ok {
			limit = "memory limit " + q
		}
		return fail(api.ReasonOOMKilled, fmt.Sprintf("pod %s container %s was OOMKilled (exit code %d, %s): give the runtime's node container more memory or set TrainJob.spec.trainer.resourcesPerNode.limits.memory",
			pod.Name, t.Container, t.ExitCode, limit))
	}
	if pullFailure {
		return fail(api.ReasonImagePullBackOff, pulled.Message)
	}
	if exitCode != nil {
		switch {
		case *exitCode != 0:
			return fail(api.ReasonLauncherFailed, fmt.Sprintf("launcher pod %s exited with code %d: %s; check `kubectl logs %s`", launcherPod.Name, *exitCode, diagnosis.TerminationMessage(launcherPod), launcherPod.Name))
		case spawned.Status != metav1.ConditionTrue:
			return fail(spawned.Reason, spawned.Message)
		default:
			v.Final = true
			v.Conditions = append(v.Conditions, metav1.Condition{Type: api.ConditionSucceeded, Status: metav1.ConditionTrue, Reason: api.ReasonPassed,
				Message: fmt.Sprintf("mpirun ran on all %d hosts of the hostfile and the launcher exited 0", hostsSeen)})
			return v
		}
	}
	if refused != nil && refused.final {
		return fail(refused.reason, refused.message)
	}
	if msg := o.jobFailure(); msg != "" {
		return fail(api.ReasonTrainJobFailed, msg)
	}
	if o.Timeout > 0 && !o.Now.Before(o.Start.Add(o.Timeout)) {
		stuck := "the launcher did not finish"
		for _, c := range v.Conditions {
			if c.Status != metav1.ConditionTrue {
				stuck = fmt.Sprintf("%s is %s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
				break
			}
		}
		return fail(api.ReasonTimeout, fmt.Sprintf("no verdict after %s: %s", o.Timeout, stuck))
	}
	return v
}

// jobFailure says why the TrainJob (or its JobSet, before the Trainer copies
// the condition) failed, with the failed Jobs' own reasons; "" if it did not.
func (o Observation) jobFailure() string {
	var msg string
	switch {
	case o.TrainJobFailed != nil:
		msg = fmt.Sprintf("the TrainJob failed (%s): %s", o.TrainJobFailed.Reason, o.TrainJobFailed.Message)
	case o.JobSetFailed != nil:
		msg = fmt.Sprintf("the JobSet failed (%s): %s", o.JobSetFailed.Reason, o.JobSetFailed.Message)
	default:
		return ""
	}
	for _, j := range o.FailedJobs {
		msg += fmt.Sprintf("; Job %s failed (%s): %s", j.Job, j.Reason, j.Message)
	}
	return msg
}

// refusal is why pods are missing: the apiserver refused them.
type refusal struct {
	reason, message string
	// final: waiting will not help (a policy refused them, not a shortage).
	final bool
}

// creationRefused reads the Warning events for the reason pods are missing
// (diagnosis.WorstRefusal) and adds what to do about it in a smoke test. Nil
// while every pod exists: an old event does not outlive the pods it was about.
func (o Observation) creationRefused() *refusal {
	if missingPods(o) == "" {
		return nil
	}
	r := diagnosis.WorstRefusal(o.Warnings)
	if r == nil {
		return nil
	}
	var fix string
	switch {
	case r.Reason == api.ReasonPodSecurity:
		fix = fmt.Sprintf("namespace %s enforces a Pod Security level (label pod-security.kubernetes.io/enforce) these pods do not meet: set what the message lists in the runtime's pod templates (securityContext), or test a runtime that meets the level", o.Namespace)
	case r.Reason == api.ReasonSecurityContextConstraints:
		fix = "no SecurityContextConstraints the pods' service account may use admits them: use a runtime without a fixed runAsUser/fsGroup, or have an admin bind an SCC that admits them to the service account"
	case r.Reason == api.ReasonQuotaExceeded:
		fix = fmt.Sprintf("a ResourceQuota in namespace %s has no room for them: free or raise the quota, or test with fewer workers or slots; the test waits for room until its timeout", o.Namespace)
	case r.Final:
		fix = "the apiserver refused them: fix what the message names, in the runtime or the namespace"
	default:
		fix = "the controller retries; the test waits until its timeout"
	}
	return &refusal{reason: r.Reason, final: r.Final, message: r.Summary() + "; " + fix}
}

func (o Observation) all() []corev1.Pod {
	return append(append([]corev1.Pod{}, o.Workers...), o.Launcher...)
}

func (o Observation) podsScheduled() metav1.Condition {
	c := metav1.Condition{Type: api.ConditionPodsScheduled}
	var waiting []string
	for _, p := range o.all() {
		if cond := diagnosis.Unschedulable(&p); cond != nil {
			c.Status, c.Reason = metav1.ConditionFalse, api.ReasonUnschedulable
			c.Message = fmt.Sprintf("pod %s cannot be scheduled: %s", p.Name, cond.Message)
			return c
		}
		if p.Spec.NodeName == "" {
			waiting = append(waiting, p.Name)
		}
	}
	missing := missingPods(o)
	if len(waiting) == 0 && missing == "" {
		c.Status, c.Reason = metav1.ConditionTrue, api.ReasonAllScheduled
		c.Message = fmt.Sprintf("the launcher and %s are bound to nodes", count(len(o.Workers), "Worker pod"))
		return c
	}
	c.Status, c.Reason = metav1.ConditionFalse, api.ReasonWaiting
	c.Message = strings.TrimSpace(joinNonEmpty("; ", listed("not yet bound", waiting), missing))
	return c
}

// missingPods says which pods do not exist yet.
func missingPods(o Observation) string {
	var parts []string
	if n := int32(len(o.Workers)); n < o.ExpectedWorkers {
		parts = append(parts, fmt.Sprintf("%d of %d Worker pods exist", n, o.ExpectedWorkers))
	}
	if len(o.Launcher) == 0 {
		parts = append(parts, "the launcher pod does not exist yet (it starts once every Worker is Ready)")
	}
	return strings.Join(parts, "; ")
}

func (o Observation) imagesPulled() (metav1.Condition, bool) {
	c := metav1.Condition{Type: api.ConditionImagesPulled}
	var waiting []string
	for _, p := range o.all() {
		if f := diagnosis.PullFailed(&p); f != nil {
			c.Status, c.Reason = metav1.ConditionFalse, api.ReasonImagePullBackOff
			c.Message = fmt.Sprintf("pod %s container %s cannot pull image %s: %s: %s; fix the image name or tag, or add imagePullSecrets to the runtime", p.Name, f.Container, f.Image, f.Reason, f.Message)
			return c, f.Final
		}
		if !imagesPresent(&p) {
			waiting = append(waiting, p.Name)
		}
	}
	missing := missingPods(o)
	if len(waiting) == 0 && missing == "" {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, api.ReasonAllPulled, "every container of the Launcher and Worker pods has its image"
		return c, false
	}
	c.Status, c.Reason = metav1.ConditionFalse, api.ReasonWaiting
	c.Message = strings.TrimSpace(joinNonEmpty("; ", listed("images not yet pulled", waiting), missing))
	return c, false
}

// imagesPresent: a container that runs or ran has its image.
func imagesPresent(p *corev1.Pod) bool {
	if len(p.Status.ContainerStatuses) < len(p.Spec.Containers) {
		return false
	}
	for _, st := range p.Status.ContainerStatuses {
		if st.State.Running == nil && st.State.Terminated == nil && st.ImageID == "" {
			return false
		}
	}
	return true
}

func (o Observation) sshReady() metav1.Condition {
	c := metav1.Condition{Type: api.ConditionSSHReady}
	var notReady []string
	for _, p := range o.Workers {
		if cond := diagnosis.PodCondition(&p, corev1.PodReady); cond == nil || cond.Status != corev1.ConditionTrue {
			notReady = append(notReady, p.Name)
		}
	}
	if len(notReady) == 0 && int32(len(o.Workers)) >= o.ExpectedWorkers {
		c.Status, c.Reason = metav1.ConditionTrue, api.ReasonWorkersReady
		c.Message = fmt.Sprintf("every Worker pod is Ready (%s; sshd accepts connections)", count(len(o.Workers), "Worker pod"))
		return c
	}
	c.Status, c.Reason = metav1.ConditionFalse, api.ReasonWaiting
	missing := ""
	if n := int32(len(o.Workers)); n < o.ExpectedWorkers {
		missing = fmt.Sprintf("%d of %d Worker pods exist", n, o.ExpectedWorkers)
	}
	c.Message = joinNonEmpty("; ", listed("Workers not Ready (sshd readiness probe failing)", notReady), missing)
	return c
}

// mpiSpawned reads the launcher's node container: its exit code and the
// distinct hostnames it wrote to the termination message.
func (o Observation) mpiSpawned() (metav1.Condition, *int32, int32, *corev1.Pod) {
	c := metav1.Condition{Type: api.ConditionMPISpawned, Status: metav1.ConditionFalse, Reason: api.ReasonWaiting, Message: "the launcher has not finished mpirun yet"}
	for i := range o.Launcher {
		p := &o.Launcher[i]
		st := diagnosis.ContainerStatus(p, trainerconstants.Node)
		if st == nil || st.State.Terminated == nil {
			continue
		}
		t := st.State.Terminated
		hosts := diagnosis.DistinctLines(t.Message)
		seen := int32(len(hosts))
		code := t.ExitCode
		switch {
		case t.ExitCode != 0 && seen == 0:
			c.Reason = api.ReasonLauncherFailed
			c.Message = fmt.Sprintf("launcher pod %s exited with code %d without reporting hosts", p.Name, t.ExitCode)
		case seen == 0:
			c.Reason = api.ReasonLauncherFailed
			c.Message = fmt.Sprintf("launcher pod %s exited 0 but wrote no hostnames to its termination message: the runtime's launcher image may lack sort/awk, or a wrapper replaced the smoke-test command", p.Name)
		case seen >= o.HostsExpected:
			c.Status, c.Reason = metav1.ConditionTrue, api.ReasonAllHosts
			c.Message = fmt.Sprintf("mpirun reached %d of %d hosts: %s", seen, o.HostsExpected, strings.Join(hosts, ", "))
		case seen == 1:
			c.Reason = api.ReasonSingleHost
			c.Message = fmt.Sprintf("launcher pod %s saw mpirun run on 1 host (%s) but the hostfile lists %d: every rank ran on one node. OpenMPI 5 ignores the Trainer's OMPI_MCA_orte_default_hostfile; launch with mpirun --hostfile %s (Intel MPI/MPICH: convert it to host:N and pass -f)", p.Name, hosts[0], o.HostsExpected, HostfilePath)
		default:
			c.Reason = api.ReasonTooFewHosts
			c.Message = fmt.Sprintf("launcher pod %s saw mpirun run on %d hosts (%s) but the hostfile lists %d: some Workers got no ranks; check the slots per worker and the launcher's -np", p.Name, seen, strings.Join(hosts, ", "), o.HostsExpected)
		}
		return c, &code, seen, p
	}
	return c, nil, 0, nil
}

func (o Observation) oomKilled() (*corev1.Pod, *diagnosis.Termination) {
	pods := o.all()
	for i := range pods {
		if t := diagnosis.OOMKilled(&pods[i]); t != nil {
			return &pods[i], t
		}
	}
	return nil, nil
}

func listed(what string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return what + ": " + strings.Join(names, ", ")
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// setConditions copies the verdict's conditions onto the status, keeping
// LastTransitionTime when a condition's status does not change.
func setConditions(status *api.RuntimeTestStatus, conds []metav1.Condition, generation int64) {
	for _, c := range conds {
		c.ObservedGeneration = generation
		meta.SetStatusCondition(&status.Conditions, c)
	}
}
