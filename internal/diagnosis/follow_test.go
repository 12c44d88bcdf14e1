package diagnosis

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func worker(i int, opts ...podOpt) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "t-node-0-" + string(rune('0'+i)) + "-x", UID: types.UID("w" + string(rune('0'+i))),
		Labels: map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "node", "batch.kubernetes.io/job-completion-index": string(rune('0' + i))},
	}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "img"}}}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func launcher(opts ...podOpt) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "t-launcher-0-0-y", UID: "l0",
		Labels: map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "launcher", "batch.kubernetes.io/job-completion-index": "0"},
	}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "img"}}}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func running(p *corev1.Pod) {
	p.Spec.NodeName = "kwok-node-0"
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", Image: "img", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}

// As kube-scheduler v1.36 writes it.
const gpuMessage = "0/8 nodes are available: 8 Insufficient nvidia.com/gpu. no new claims to deallocate, preemption: 0/8 nodes are available: 8 No preemption victims found for incoming pod."

func unschedulable(p *corev1.Pod) {
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: gpuMessage}}
}

func pending(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }

func terminated(code int32, reason, msg string) podOpt {
	return func(p *corev1.Pod) {
		running(p)
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg, FinishedAt: metav1.NewTime(t0)}}
	}
}

func memoryLimit(q string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
	}
}

func pullBackOff(p *corev1.Pod) {
	p.Spec.NodeName = "kwok-node-0"
	p.Status.Phase = corev1.PodPending
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", Image: "registry.example/nope:1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.example/nope:1"`}}}}
}

const quotaMessage = `Error creating: pods "t-node-0-0-abcde" is forbidden: exceeded quota: gpus, requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=16, limited: requests.nvidia.com/gpu=16`

func base() Observation {
	return Observation{Job: "t", Namespace: "nlp-team", ExpectedWorkers: 6, ExpectedLaunchers: 1, NetworkPolicyTemplate: "job-isolated"}
}

func TestWaiting(t *testing.T) {
	cases := map[string]struct {
		obs   func(o *Observation)
		want  *Finding
		phase Phase
	}{
		"4 of 6 Workers unschedulable": {
			obs: func(o *Observation) {
				o.Pods = Pods{Launcher: []corev1.Pod{launcher(pending)}, Workers: []corev1.Pod{worker(0, running), worker(1, running), worker(2, unschedulable), worker(3, unschedulable), worker(4, unschedulable), worker(5, unschedulable)}}
			},
			want: &Finding{Key: "unschedulable", Type: "Warning", Reason: ReasonUnschedulable,
				Message: "4 of 6 Workers unschedulable (Worker 2, 3, 4, 5): 0/8 nodes are available: 8 Insufficient nvidia.com/gpu. The nodes cannot hold them now: free what the scheduler names, ask for fewer or smaller Workers, or match the runtime's nodeSelector, affinity and tolerations to the nodes; `mpiguard explain nlp-team/t`; see docs/troubleshooting.md#unschedulable"},
			phase: PhaseWaiting,
		},
		"the Launcher unschedulable too": {
			obs: func(o *Observation) {
				o.ExpectedWorkers = 1
				o.Pods = Pods{Launcher: []corev1.Pod{launcher(unschedulable)}, Workers: []corev1.Pod{worker(0, unschedulable)}}
			},
			want: &Finding{Key: "unschedulable", Type: "Warning", Reason: ReasonUnschedulable,
				Message: "1 of 1 Workers unschedulable (Worker 0): 0/8 nodes are available: 8 Insufficient nvidia.com/gpu; the Launcher (pod t-launcher-0-0-y) unschedulable: 0/8 nodes are available: 8 Insufficient nvidia.com/gpu. The nodes cannot hold them now: free what the scheduler names, ask for fewer or smaller Workers, or match the runtime's nodeSelector, affinity and tolerations to the nodes; `mpiguard explain nlp-team/t`; see docs/troubleshooting.md#unschedulable"},
			phase: PhaseWaiting,
		},
		"quota on the Workers' Job": {
			obs: func(o *Observation) {
				o.Pods = Pods{Launcher: []corev1.Pod{launcher(running)}}
				o.Warnings = []Warning{{Kind: "Job", Name: "t-node-0", Reason: "FailedCreate", Count: 3, Last: t0, Message: quotaMessage}}
			},
			want: &Finding{Key: "refused/QuotaExceeded", Type: "Warning", Reason: ReasonJobsNotCreated,
				Message: "the job's pods are not created: Job t-node-0 cannot create its pods (FailedCreate, 3 times): " + quotaMessage +
					". A ResourceQuota in namespace nlp-team has no room for them (`kubectl describe resourcequota -n nlp-team`): the Job controller retries; free quota, raise it, or ask for fewer Workers; see docs/troubleshooting.md#jobs-not-created"},
			phase: PhaseWaiting,
		},
		"an old refusal does not outlive the pods": {
			obs: func(o *Observation) {
				o.ExpectedWorkers = 1
				o.Pods = Pods{Launcher: []corev1.Pod{launcher(running)}, Workers: []corev1.Pod{worker(0, running)}}
				o.Warnings = []Warning{{Kind: "Job", Name: "t-node-0", Reason: "FailedCreate", Count: 1, Last: t0, Message: quotaMessage}}
			},
			phase: PhaseRunning,
		},
		"Kueue holds it": {
			obs: func(o *Observation) {
				o.Suspended, o.Queue = true, "team"
				o.Workload = &Workload{Name: "trainjob-t-1a2b", Message: "couldn't assign flavors to pod set node: insufficient quota for nvidia.com/gpu in flavor default, request > maximum capacity (48 > 32)"}
			},
			want: &Finding{Key: "kueue", Type: "Normal", Reason: ReasonQueuedByKueue,
				Message: "Kueue holds the job in LocalQueue team: Workload trainjob-t-1a2b is not admitted: couldn't assign flavors to pod set node: insufficient quota for nvidia.com/gpu in flavor default, request > maximum capacity (48 > 32). It starts once its ClusterQueue has room; `kubectl get workloads -n nlp-team` shows the queue; see docs/troubleshooting.md#queued-by-kueue"},
			phase: PhaseWaiting,
		},
		"suspended by the user: not followed": {
			obs:   func(o *Observation) { o.Suspended = true },
			phase: PhaseSuspended,
		},
		"the gang waits": {
			obs: func(o *Observation) {
				o.ExpectedWorkers = 2
				o.Pods = Pods{Launcher: []corev1.Pod{launcher(pending)}, Workers: []corev1.Pod{worker(0, pending), worker(1, unschedulable)}}
				o.Gang = &Gang{Kind: "PodGroup", Name: "t", Phase: "Pending", MinMember: 3, Scheduled: 0}
			},
			want: &Finding{Key: "gang", Type: "Normal", Reason: ReasonGangWaiting,
				Message: "the gang waits: PodGroup t is Pending, 0 of its 3 pods scheduled: the scheduler starts the Launcher and Workers together or not at all; 1 of 2 Workers unschedulable (Worker 1): 0/8 nodes are available: 8 Insufficient nvidia.com/gpu. `kubectl get podgroup -n nlp-team t -o yaml` shows it; see docs/troubleshooting.md#gang-waiting"},
			phase: PhaseWaiting,
		},
		"pods starting: nothing to say": {
			obs: func(o *Observation) {
				o.ExpectedWorkers = 1
				o.Pods = Pods{Launcher: []corev1.Pod{launcher(pending)}, Workers: []corev1.Pod{worker(0, pending)}}
			},
			phase: PhaseWaiting,
		},
		"finished": {
			obs: func(o *Observation) {
				o.TrainJobComplete = &metav1.Condition{Type: "Complete", Status: "True"}
			},
			phase: PhaseSucceeded,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := base()
			tc.obs(&o)
			if diff := cmp.Diff(tc.want, o.Waiting()); diff != "" {
				t.Errorf("Waiting (-want +got):\n%s", diff)
			}
			if got := o.Phase(); got != tc.phase {
				t.Errorf("Phase = %s, want %s", got, tc.phase)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	sshMessage := "ssh: connect to host t-node-0-1.t port 2222: Connection refused\r\n--------------------------------------------------------------------------\nORTE was unable to reliably start one or more daemons."
	cases := map[string]struct {
		obs  func(o *Observation)
		want []Finding
	}{
		"a Worker OOMKilled": {
			obs: func(o *Observation) {
				o.Pods.Workers = []corev1.Pod{worker(0, running), worker(2, terminated(137, "OOMKilled", ""), memoryLimit("64Gi"))}
			},
			want: []Finding{{Key: "oom/w2/node/1767225600", Type: "Warning", Reason: ReasonOOMKilled,
				Message: "Worker 2 (pod t-node-0-2-x) was OOMKilled: limit 64Gi (container node, exit code 137). Its processes need more memory than that: raise spec.trainer.resourcesPerNode.limits.memory, or use less per rank (batch size, Slots per worker); see docs/troubleshooting.md#oomkilled"}},
		},
		"the Launcher cannot reach Worker 1 over SSH": {
			obs: func(o *Observation) {
				o.Pods.Launcher = []corev1.Pod{launcher(terminated(1, "Error", sshMessage))}
			},
			want: []Finding{{Key: "exit/l0/node/1767225600", Type: "Warning", Reason: ReasonLauncherSSHFailed,
				Message: "the Launcher cannot reach Worker 1 over SSH: Launcher (pod t-launcher-0-0-y) (container node exited with code 1 (Error): `ssh: connect to host t-node-0-1.t port 2222: Connection refused`); the job's NetworkPolicy template is `job-isolated`. Check that Worker 1's sshd listens on the runtime's SSH port (annotation mpiguard.io/network-policy-ssh-port) and that the policy lets the Launcher in: `kubectl get networkpolicy -n nlp-team t -o yaml`; see docs/troubleshooting.md#ssh"}},
		},
		"the Launcher fails for another reason: the first line of its message": {
			obs: func(o *Observation) {
				o.Pods.Launcher = []corev1.Pod{launcher(terminated(2, "Error", "\nTraceback (most recent call last):\n  File x"))}
			},
			want: []Finding{{Key: "exit/l0/node/1767225600", Type: "Warning", Reason: ReasonLauncherFailed,
				Message: "Launcher (pod t-launcher-0-0-y) failed: container node exited with code 2 (Error): Traceback (most recent call last):. mpirun or the training program failed: `kubectl logs -n nlp-team t-launcher-0-0-y`; see docs/troubleshooting.md#launcher-failed"}},
		},
		"an image that cannot be pulled": {
			obs: func(o *Observation) { o.Pods.Workers = []corev1.Pod{worker(1, pullBackOff)} },
			want: []Finding{{Key: "pull/w1/node", Type: "Warning", Reason: ReasonImagePullFailed,
				Message: `Worker 1 (pod t-node-0-1-x) cannot pull image registry.example/nope:1 for container node: ImagePullBackOff: Back-off pulling image "registry.example/nope:1". Fix the image name or tag in the runtime or the TrainJob, or give the pods imagePullSecrets; ` + "`kubectl describe pod -n nlp-team t-node-0-1-x`; see docs/troubleshooting.md#image-pull"}},
		},
		"an evicted Worker": {
			obs: func(o *Observation) {
				o.Pods.Workers = []corev1.Pod{worker(3, func(p *corev1.Pod) {
					p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
				})}
			},
			want: []Finding{{Key: "evicted/w3", Type: "Warning", Reason: ReasonEvicted,
				Message: "Worker 3 (pod t-node-0-3-x) was evicted: The node was low on resource: memory. Its node ran short (memory, disk) or an admin drained it: give the pods requests equal to their limits, or ask an admin about the node; see docs/troubleshooting.md#evicted"}},
		},
		"a Worker the JobSet deletes is not a failure": {
			obs: func(o *Observation) {
				o.Pods.Workers = []corev1.Pod{worker(0, terminated(143, "Error", ""), func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} })}
			},
		},
		"the JobSet failed: which replicated job first": {
			obs: func(o *Observation) {
				o.JobSetFailed = &metav1.Condition{Type: "Failed", Status: "True", Reason: "FailedJobs", Message: "jobset failed due to one or more job failures", LastTransitionTime: metav1.NewTime(t0)}
				o.FailedJobs = []JobFailure{
					{Job: "t-node-0", ReplicatedJob: "node", Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", At: t0.Add(time.Second)},
					{Job: "t-launcher-0", ReplicatedJob: "launcher", Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", At: t0},
				}
			},
			want: []Finding{{Key: "jobset/2026-01-01T00:00:00Z", Type: "Warning", Reason: ReasonJobSetFailed,
				Message: "the JobSet failed (FailedJobs: jobset failed due to one or more job failures): the Launcher's Job t-launcher-0 failed first (BackoffLimitExceeded: Job has reached the specified backoff limit). The pods' own Events say why; `kubectl get jobs -n nlp-team -l jobset.sigs.k8s.io/jobset-name=t`; see docs/troubleshooting.md#jobset-failed"}},
		},
		"DeadlineExceeded": {
			obs: func(o *Observation) {
				o.Deadline.Max = 7200 * time.Second
				o.TrainJobFailed = &metav1.Condition{Type: "Failed", Status: "True", Reason: "DeadlineExceeded", Message: "TrainJob exceeded its active deadline", LastTransitionTime: metav1.NewTime(t0)}
			},
			want: []Finding{{Key: "deadline/2026-01-01T00:00:00Z", Type: "Warning", Reason: ReasonDeadlineExceeded,
				Message: "the TrainJob ran longer than its spec.activeDeadlineSeconds (2h0m0s) and its pods were stopped: TrainJob exceeded its active deadline. mpiguard's max-duration policy sets the deadline when the job gives none; ask for a longer one within the namespace's limit, or checkpoint and resume; see docs/troubleshooting.md#deadline-exceeded"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := base()
			tc.obs(&o)
			if diff := cmp.Diff(tc.want, o.Failures(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Failures (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSSHFailed(t *testing.T) {
	cases := map[string]*SSHFailure{
		"ssh: connect to host t-node-0-1.t port 2222: Connection refused":                 {Line: "ssh: connect to host t-node-0-1.t port 2222: Connection refused", Host: "t-node-0-1.t", Worker: 1},
		"noise\nssh: Could not resolve hostname t-node-0-12.t: Name or service not known": {Line: "ssh: Could not resolve hostname t-node-0-12.t: Name or service not known", Host: "t-node-0-12.t", Worker: 12},
		"Permission denied (publickey).":                                                  {Line: "Permission denied (publickey).", Worker: -1},
		"Traceback (most recent call last):":                                              nil,
		"":                                                                                nil,
	}
	for msg, want := range cases {
		if diff := cmp.Diff(want, SSHFailed(msg)); diff != "" {
			t.Errorf("SSHFailed(%q) (-want +got):\n%s", msg, diff)
		}
	}
}

func TestRefused(t *testing.T) {
	cases := map[string]struct {
		w    Warning
		want *Refusal
	}{
		"quota": {w: Warning{Kind: "Job", Name: "j", Reason: "FailedCreate", Message: quotaMessage},
			want: &Refusal{Reason: "QuotaExceeded", What: "Job j cannot create its pods"}},
		"a webhook on the JobSet's Jobs": {w: Warning{Kind: "JobSet", Name: "t", Reason: "JobCreationFailed", Message: `admission webhook "x" denied the request: no`},
			want: &Refusal{Reason: "PodsRejected", Final: true, What: "JobSet t cannot create its Jobs"}},
		"not a refusal": {w: Warning{Kind: "Job", Name: "j", Reason: "BackoffLimitExceeded"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.want != nil {
				tc.want.Event = tc.w
			}
			if diff := cmp.Diff(tc.want, Refused(tc.w)); diff != "" {
				t.Errorf("Refused (-want +got):\n%s", diff)
			}
		})
	}
}
