package smoketest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/mpiguard/mpiguard/api/v1alpha1"
)

type podOpt func(*corev1.Pod)

func pod(name string, opts ...podOpt) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "img"}}}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func scheduled(p *corev1.Pod) { p.Spec.NodeName = "n1" }
func running(p *corev1.Pod) {
	scheduled(p)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", Image: "img", ImageID: "sha", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}
func ready(p *corev1.Pod) {
	running(p)
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
}
func exited(code int32, msg string) podOpt {
	return func(p *corev1.Pod) {
		scheduled(p)
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", Image: "img", ImageID: "sha", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: msg}}}}
	}
}
func pullBackOff(p *corev1.Pod) {
	scheduled(p)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", Image: "registry.example/nope:1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.example/nope:1"`}}}}
}
func oom(p *corev1.Pod) {
	ready(p)
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
	p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
}
func unschedulable(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}
}

// What the Job controller records (kube-controller-manager v1.36).
const (
	podSecurityMessage = `Error creating: pods "t-smoke-node-0-0-abcde" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "node" must set securityContext.allowPrivilegeEscalation=false)`
	quotaMessage       = `Error creating: pods "t-smoke-node-0-0-abcde" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=4, limited: pods=4`
)

type cond struct {
	Type, Reason string
	Status       metav1.ConditionStatus
}

func summary(v Verdict) []cond {
	var out []cond
	for _, c := range v.Conditions {
		out = append(out, cond{c.Type, c.Reason, c.Status})
	}
	return out
}

func TestEvaluate(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := func() Observation {
		return Observation{ExpectedWorkers: 2, HostsExpected: 2, Namespace: "team-a", Start: start, Now: start.Add(time.Minute), Timeout: 10 * time.Minute}
	}
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	created := cond{api.ConditionJobCreated, api.ReasonCreated, T}
	cases := map[string]struct {
		obs         func(o *Observation)
		want        []cond
		wantMessage string // of the last condition
		final       bool
	}{
		"nothing yet": {
			obs: func(o *Observation) {},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonWaiting, F}, {api.ConditionImagesPulled, api.ReasonWaiting, F},
				{api.ConditionSSHReady, api.ReasonWaiting, F}, {api.ConditionMPISpawned, api.ReasonWaiting, F}},
			wantMessage: "the launcher has not finished mpirun yet",
		},
		"success": {
			obs: func(o *Observation) {
				o.Workers = []corev1.Pod{pod("w0", ready), pod("w1", ready)}
				o.Launcher = []corev1.Pod{pod("l0", exited(0, "w0\nw1\nw0\n"))}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonAllScheduled, T}, {api.ConditionImagesPulled, api.ReasonAllPulled, T},
				{api.ConditionSSHReady, api.ReasonWorkersReady, T}, {api.ConditionMPISpawned, api.ReasonAllHosts, T},
				{api.ConditionSucceeded, api.ReasonPassed, T}},
			wantMessage: "mpirun ran on all 2 hosts of the hostfile and the launcher exited 0",
			final:       true,
		},
		"image pull failure names the pod and image": {
			obs: func(o *Observation) {
				o.Workers = []corev1.Pod{pod("w0", ready), pod("w1", pullBackOff)}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonWaiting, F}, {api.ConditionImagesPulled, api.ReasonImagePullBackOff, F},
				{api.ConditionSSHReady, api.ReasonWaiting, F}, {api.ConditionMPISpawned, api.ReasonWaiting, F},
				{api.ConditionSucceeded, api.ReasonImagePullBackOff, F}},
			wantMessage: `pod w1 container node cannot pull image registry.example/nope:1: ImagePullBackOff: Back-off pulling image "registry.example/nope:1"; fix the image name or tag, or add imagePullSecrets to the runtime`,
			final:       true,
		},
		"OOM on a Worker": {
			obs: func(o *Observation) {
				o.Workers = []corev1.Pod{pod("w0", ready), pod("w1", oom)}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonWaiting, F}, {api.ConditionImagesPulled, api.ReasonWaiting, F},
				{api.ConditionSSHReady, api.ReasonWorkersReady, T}, {api.ConditionMPISpawned, api.ReasonWaiting, F},
				{api.ConditionSucceeded, api.ReasonOOMKilled, F}},
			wantMessage: "pod w1 container node was OOMKilled (exit code 137, memory limit 64Mi): give the runtime's node container more memory or set TrainJob.spec.trainer.resourcesPerNode.limits.memory",
			final:       true,
		},
		"single-host MPI": {
			obs: func(o *Observation) {
				o.Workers = []corev1.Pod{pod("w0", ready), pod("w1", ready)}
				o.Launcher = []corev1.Pod{pod("l0", exited(0, "l0\n"))}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonAllScheduled, T}, {api.ConditionImagesPulled, api.ReasonAllPulled, T},
				{api.ConditionSSHReady, api.ReasonWorkersReady, T}, {api.ConditionMPISpawned, api.ReasonSingleHost, F},
				{api.ConditionSucceeded, api.ReasonSingleHost, F}},
			wantMessage: "launcher pod l0 saw mpirun run on 1 host (l0) but the hostfile lists 2: every rank ran on one node. OpenMPI 5 ignores the Trainer's OMPI_MCA_orte_default_hostfile; launch with mpirun --hostfile /etc/mpi/hostfile (Intel MPI/MPICH: convert it to host:N and pass -f)",
			final:       true,
		},
		"launcher exits non-zero": {
			obs: func(o *Observation) {
				o.Workers = []corev1.Pod{pod("w0", ready), pod("w1", ready)}
				o.Launcher = []corev1.Pod{pod("l0", exited(1, ""))}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonAllScheduled, T}, {api.ConditionImagesPulled, api.ReasonAllPulled, T},
				{api.ConditionSSHReady, api.ReasonWorkersReady, T}, {api.ConditionMPISpawned, api.ReasonLauncherFailed, F},
				{api.ConditionSucceeded, api.ReasonLauncherFailed, F}},
			wantMessage: "launcher pod l0 exited with code 1: ; check `kubectl logs l0`",
			final:       true,
		},
		"timeout while a Worker is unschedulable": {
			obs: func(o *Observation) {
				o.Now = start.Add(10 * time.Minute)
				o.Workers = []corev1.Pod{pod("w0", ready), pod("w1", unschedulable)}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonUnschedulable, F}, {api.ConditionImagesPulled, api.ReasonWaiting, F},
				{api.ConditionSSHReady, api.ReasonWaiting, F}, {api.ConditionMPISpawned, api.ReasonWaiting, F},
				{api.ConditionSucceeded, api.ReasonTimeout, F}},
			wantMessage: "no verdict after 10m0s: PodsScheduled is False (Unschedulable): pod w1 cannot be scheduled: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
			final:       true,
		},
		"pods refused by Pod Security: final, quoting the Job controller": {
			obs: func(o *Observation) {
				o.Warnings = []Warning{
					{Kind: "Job", Name: "t-smoke-node-0", Reason: "BackoffLimitExceeded", Message: "unrelated", Last: start},
					{Kind: "Job", Name: "t-smoke-node-0", Reason: "FailedCreate", Count: 3, Last: start.Add(time.Second), Message: podSecurityMessage},
				}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonPodSecurity, F}, {api.ConditionImagesPulled, api.ReasonWaiting, F},
				{api.ConditionSSHReady, api.ReasonWaiting, F}, {api.ConditionMPISpawned, api.ReasonWaiting, F},
				{api.ConditionSucceeded, api.ReasonPodSecurity, F}},
			wantMessage: "Job t-smoke-node-0 cannot create its pods (FailedCreate, 3 times): " + podSecurityMessage +
				"; namespace team-a enforces a Pod Security level (label pod-security.kubernetes.io/enforce) these pods do not meet: set what the message lists in the runtime's pod templates (securityContext), or test a runtime that meets the level",
			final: true,
		},
		"OpenShift SCC refusal is final": {
			obs: func(o *Observation) {
				o.Workers = []corev1.Pod{pod("w0", ready)}
				o.Warnings = []Warning{{Kind: "Job", Name: "t-smoke-node-0", Reason: "FailedCreate", Count: 1, Last: start,
					Message: `Error creating: pods "t-smoke-node-0-1-x" is forbidden: unable to validate against any security context constraint: [provider "restricted-v2": .spec.securityContext.fsGroup: Invalid value: []int64{1000}: 1000 is not an allowed group]`}}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonSecurityContextConstraints, F}, {api.ConditionImagesPulled, api.ReasonWaiting, F},
				{api.ConditionSSHReady, api.ReasonWaiting, F}, {api.ConditionMPISpawned, api.ReasonWaiting, F},
				{api.ConditionSucceeded, api.ReasonSecurityContextConstraints, F}},
			wantMessage: `Job t-smoke-node-0 cannot create its pods (FailedCreate): Error creating: pods "t-smoke-node-0-1-x" is forbidden: unable to validate against any security context constraint: [provider "restricted-v2": .spec.securityContext.fsGroup: Invalid value: []int64{1000}: 1000 is not an allowed group]` +
				"; no SecurityContextConstraints the pods' service account may use admits them: use a runtime without a fixed runAsUser/fsGroup, or have an admin bind an SCC that admits them to the service account",
			final: true,
		},
		"quota waits, and the timeout quotes it": {
			obs: func(o *Observation) {
				o.Now = start.Add(10 * time.Minute)
				o.Warnings = []Warning{{Kind: "Job", Name: "t-smoke-node-0", Reason: "FailedCreate", Count: 7, Last: start, Message: quotaMessage}}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonQuotaExceeded, F}, {api.ConditionImagesPulled, api.ReasonWaiting, F},
				{api.ConditionSSHReady, api.ReasonWaiting, F}, {api.ConditionMPISpawned, api.ReasonWaiting, F},
				{api.ConditionSucceeded, api.ReasonTimeout, F}},
			wantMessage: "no verdict after 10m0s: PodsScheduled is False (QuotaExceeded): Job t-smoke-node-0 cannot create its pods (FailedCreate, 7 times): " + quotaMessage +
				"; a ResourceQuota in namespace team-a has no room for them: free or raise the quota, or test with fewer workers or slots; the test waits for room until its timeout",
			final: true,
		},
		"quota before the timeout is not a verdict": {
			obs: func(o *Observation) {
				o.Warnings = []Warning{{Kind: "Job", Name: "t-smoke-node-0", Reason: "FailedCreate", Count: 1, Last: start, Message: quotaMessage}}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonQuotaExceeded, F}, {api.ConditionImagesPulled, api.ReasonWaiting, F},
				{api.ConditionSSHReady, api.ReasonWaiting, F}, {api.ConditionMPISpawned, api.ReasonWaiting, F}},
			wantMessage: "the launcher has not finished mpirun yet",
		},
		"a final refusal outranks a later quota one": {
			obs: func(o *Observation) {
				o.Warnings = []Warning{
					{Kind: "Job", Name: "t-smoke-node-0", Reason: "FailedCreate", Count: 1, Last: start, Message: podSecurityMessage},
					{Kind: "Job", Name: "t-smoke-launcher-0", Reason: "FailedCreate", Count: 1, Last: start.Add(time.Minute), Message: quotaMessage},
				}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonPodSecurity, F}, {api.ConditionImagesPulled, api.ReasonWaiting, F},
				{api.ConditionSSHReady, api.ReasonWaiting, F}, {api.ConditionMPISpawned, api.ReasonWaiting, F},
				{api.ConditionSucceeded, api.ReasonPodSecurity, F}},
			wantMessage: "Job t-smoke-node-0 cannot create its pods (FailedCreate): " + podSecurityMessage +
				"; namespace team-a enforces a Pod Security level (label pod-security.kubernetes.io/enforce) these pods do not meet: set what the message lists in the runtime's pod templates (securityContext), or test a runtime that meets the level",
			final: true,
		},
		"the JobSet cannot create a Job: a webhook denied it": {
			obs: func(o *Observation) {
				o.Warnings = []Warning{{Kind: "JobSet", Name: "t-smoke", Reason: "JobCreationFailed", Count: 2, Last: start,
					Message: `admission webhook "vjob.example.com" denied the request: jobs need a team label`}}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonPodsRejected, F}, {api.ConditionImagesPulled, api.ReasonWaiting, F},
				{api.ConditionSSHReady, api.ReasonWaiting, F}, {api.ConditionMPISpawned, api.ReasonWaiting, F},
				{api.ConditionSucceeded, api.ReasonPodsRejected, F}},
			wantMessage: `JobSet t-smoke cannot create its Jobs (JobCreationFailed, 2 times): admission webhook "vjob.example.com" denied the request: jobs need a team label; the apiserver refused them: fix what the message names, in the runtime or the namespace`,
			final:       true,
		},
		"a transient create error is reported, not a verdict": {
			obs: func(o *Observation) {
				o.Warnings = []Warning{{Kind: "Job", Name: "t-smoke-node-0", Reason: "FailedCreate", Count: 1, Last: start, Message: "Error creating: etcdserver: request timed out"}}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonPodsRejected, F}, {api.ConditionImagesPulled, api.ReasonWaiting, F},
				{api.ConditionSSHReady, api.ReasonWaiting, F}, {api.ConditionMPISpawned, api.ReasonWaiting, F}},
			wantMessage: "the launcher has not finished mpirun yet",
		},
		"an old refusal does not outlive the pods": {
			obs: func(o *Observation) {
				o.Workers = []corev1.Pod{pod("w0", ready), pod("w1", ready)}
				o.Launcher = []corev1.Pod{pod("l0", running)}
				o.Warnings = []Warning{{Kind: "Job", Name: "t-smoke-node-0", Reason: "FailedCreate", Count: 1, Last: start, Message: podSecurityMessage}}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonAllScheduled, T}, {api.ConditionImagesPulled, api.ReasonAllPulled, T},
				{api.ConditionSSHReady, api.ReasonWorkersReady, T}, {api.ConditionMPISpawned, api.ReasonWaiting, F}},
			wantMessage: "the launcher has not finished mpirun yet",
		},
		"a failed JobSet quotes its failed Jobs": {
			obs: func(o *Observation) {
				o.Workers = []corev1.Pod{pod("w0", ready), pod("w1", ready)}
				o.JobSetFailed = &metav1.Condition{Type: "Failed", Status: T, Reason: "FailedJobs", Message: "jobset failed due to one or more job failures"}
				o.FailedJobs = []JobFailure{{Job: "t-smoke-launcher-0", Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}}
			},
			want: []cond{created,
				{api.ConditionPodsScheduled, api.ReasonWaiting, F}, {api.ConditionImagesPulled, api.ReasonWaiting, F},
				{api.ConditionSSHReady, api.ReasonWorkersReady, T}, {api.ConditionMPISpawned, api.ReasonWaiting, F},
				{api.ConditionSucceeded, api.ReasonTrainJobFailed, F}},
			wantMessage: "the JobSet failed (FailedJobs): jobset failed due to one or more job failures; Job t-smoke-launcher-0 failed (DeadlineExceeded): Job was active longer than specified deadline",
			final:       true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := base()
			tc.obs(&o)
			v := Evaluate(o)
			if diff := cmp.Diff(tc.want, summary(v), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMessage, v.Conditions[len(v.Conditions)-1].Message); diff != "" {
				t.Errorf("message of %s (-want +got):\n%s", v.Conditions[len(v.Conditions)-1].Type, diff)
			}
			if v.Final != tc.final {
				t.Errorf("Final = %v, want %v", v.Final, tc.final)
			}
		})
	}
}
