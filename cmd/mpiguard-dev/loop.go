package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	quotav1alpha1 "github.com/mpiguard/mpiguard/api/v1alpha1"
)

// The quota loop's namespace, its ResourceQuota and the resource it shows
// (samples/cluster.yaml), and its two jobs (samples/jobs.yaml): the first
// fits the quota, the second only once the first finished.
const (
	loopNamespace = "team-a"
	loopGPU       = corev1.ResourceName("requests.nvidia.com/gpu")
	firstJob      = "resnet-2x4"
	secondJob     = "bert-3x4"
	// stepTimeout bounds each wait: every one is a few seconds on a free
	// machine (KWOK's stages, the controllers' round trips).
	stepTimeout = 2 * time.Minute
)

// stepper prints each step of the loop with how long it took.
type stepper struct {
	n          int
	start, now time.Time
}

func newStepper() *stepper {
	now := time.Now()
	return &stepper{start: now, now: now}
}

// done prints step n (from 1): what happened and how long since the last.
func (s *stepper) done(format string, args ...any) {
	s.n++
	now := time.Now()
	fmt.Printf("  [loop %d] %-6s %s\n", s.n, now.Sub(s.now).Round(100*time.Millisecond), fmt.Sprintf(format, args...))
	s.now = now
}

// showQuotaLoop shows the quota guarantee's whole loop on the local cluster,
// where jobs really run: a TrainJob is admitted with a reservation of its
// quota; its pods are scheduled and Running on KWOK nodes and the
// ResourceQuota's status.used counts them (kube-apiserver's quota admission
// and kube-controller-manager's resourcequota controller; nobody sets it
// here); the reservation is retired; a second job that does not fit beside
// it is refused; the first finishes, its quota comes back, and the second,
// resubmitted, is admitted.
func showQuotaLoop(ctx context.Context, d *demo) error {
	if err := createSampleCluster(ctx, d.env.Client); err != nil {
		return err
	}
	hard, err := d.waitQuotaUsed(ctx, func(corev1.ResourceList) bool { return true })
	if err != nil {
		return err
	}
	say("the quota loop in namespace %s (ResourceQuota %s: %s GPUs; runtime demo-openmpi-4gpu: a Launcher and Workers with 4 GPUs each;",
		loopNamespace, loopNamespace, quantity(hard.Status.Hard, loopGPU))
	say("%d KWOK nodes with nvidia.com/gpu play the kubelets; each step with the time it took):", d.nodes(ctx))
	s := newStepper()

	if ok, err := d.submit(ctx, firstJob, "2 Workers x 4 GPUs: fits the quota", false); err != nil || !ok {
		return loopFailed(err, "%s was not admitted", firstJob)
	}
	if res := d.reservationOf(ctx, firstJob); res != nil {
		s.done("%s admitted; its QuotaReservation entry (%s/%s) holds %s until its pods exist", firstJob, d.env.PolicyNamespace, loopNamespace, describeParts(res.Parts))
	} else {
		s.done("%s admitted (its reservation already retired)", firstJob)
	}

	pods, err := d.waitPodsRunning(ctx, firstJob)
	if err != nil {
		return err
	}
	s.done("its pods are Running on KWOK nodes (scheduled by kube-scheduler):")
	for _, p := range pods {
		fmt.Printf("             %-40s %-8s on %s\n", p.Name, p.Status.Phase, p.Spec.NodeName)
	}

	q, err := d.waitQuotaUsed(ctx, func(used corev1.ResourceList) bool { return used.Name(loopGPU, resource.DecimalSI).Sign() > 0 })
	if err != nil {
		return err
	}
	s.done("ResourceQuota %s status.used, counted by the cluster (not by mpiguard): %s of %s GPUs, %s of %s CPUs", q.Name,
		quantity(q.Status.Used, loopGPU), quantity(q.Status.Hard, loopGPU), quantity(q.Status.Used, "requests.cpu"), quantity(q.Status.Hard, "requests.cpu"))

	if err := poll(ctx, func(ctx context.Context) (bool, error) { return d.reservationOf(ctx, firstJob) == nil, nil }); err != nil {
		return timedOut(err, "the reservation of %s was never retired", firstJob)
	}
	s.done("the reservation of %s is retired: the quota counts its pods now", firstJob)

	if ok, err := d.submit(ctx, secondJob, "3 Workers x 4 GPUs while "+firstJob+" runs: the quota cannot hold both", false); err != nil || ok {
		return loopFailed(err, "%s was admitted beside %s", secondJob, firstJob)
	}
	s.done("%s refused while %s runs", secondJob, firstJob)

	if err := d.waitFinished(ctx, firstJob); err != nil {
		return err
	}
	s.done("%s finished: its Launcher completed (KWOK's pod-complete stage), the JobSet and the TrainJob are Complete", firstJob)

	q, err = d.waitQuotaUsed(ctx, func(used corev1.ResourceList) bool { return used.Name(loopGPU, resource.DecimalSI).IsZero() })
	if err != nil {
		return err
	}
	if err := d.waitManagerSees(ctx, q); err != nil {
		return err
	}
	s.done("the resourcequota controller gave the quota back: status.used %s of %s GPUs", quantity(q.Status.Used, loopGPU), quantity(q.Status.Hard, loopGPU))

	if ok, err := d.submit(ctx, secondJob, "resubmitted now that "+firstJob+" finished", false); err != nil || !ok {
		return loopFailed(err, "%s was refused after %s finished", secondJob, firstJob)
	}
	s.done("%s admitted", secondJob)
	say("quota loop done in %s", time.Since(s.start).Round(100*time.Millisecond))
	fmt.Println()
	return nil
}

// loopFailed is the loop's error: err if the call failed, else that the
// outcome was not the expected one.
func loopFailed(err error, format string, args ...any) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("quota loop: "+format, args...)
}

// timedOut says what a wait that failed waited for (nil if it did not fail).
func timedOut(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("quota loop: "+format+": %w", append(args, err)...)
}

func poll(ctx context.Context, done wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, stepTimeout, true, done)
}

// nodes counts the cluster's nodes.
func (d *demo) nodes(ctx context.Context) int {
	var nodes corev1.NodeList
	_ = d.env.Client.List(ctx, &nodes)
	return len(nodes.Items)
}

// reservationOf is job's entry in the loop namespace's QuotaReservation (nil: none).
func (d *demo) reservationOf(ctx context.Context, job string) *quotav1alpha1.ReservationEntry {
	var res quotav1alpha1.QuotaReservation
	if err := d.env.Client.Get(ctx, client.ObjectKey{Namespace: d.env.PolicyNamespace, Name: loopNamespace}, &res); err != nil {
		return nil
	}
	for i := range res.Spec.Entries {
		if res.Spec.Entries[i].TrainJob == job {
			return &res.Spec.Entries[i]
		}
	}
	return nil
}

func describeParts(parts []quotav1alpha1.ReservedPart) string {
	var out []string
	for _, p := range parts {
		out = append(out, fmt.Sprintf("%d %s pod(s)", p.Pods, p.ReplicatedJob))
	}
	return strings.Join(out, " + ")
}

// waitPodsRunning waits until every pod of job's JobSet (each replicated
// job's, as many as the JobSet asks for) is Running.
func (d *demo) waitPodsRunning(ctx context.Context, job string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		var js jobsetv1alpha2.JobSet
		if err := d.env.Client.Get(ctx, client.ObjectKey{Namespace: loopNamespace, Name: job}, &js); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		want := 0
		for _, rj := range js.Spec.ReplicatedJobs {
			want += int(rj.Replicas) * int(ptr.Deref(rj.Template.Spec.Parallelism, 1))
		}
		if err := d.env.Client.List(ctx, &pods, client.InNamespace(loopNamespace), client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: job}); err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
				running++
			}
		}
		return running == want, nil
	})
	if err != nil {
		return nil, timedOut(err, "the pods of %s never all ran", job)
	}
	return pods.Items, nil
}

// waitQuotaUsed waits until the loop namespace's ResourceQuota has a
// status.used that ok accepts, and returns it.
func (d *demo) waitQuotaUsed(ctx context.Context, ok func(corev1.ResourceList) bool) (*corev1.ResourceQuota, error) {
	q := &corev1.ResourceQuota{}
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		if err := d.env.Client.Get(ctx, client.ObjectKey{Namespace: loopNamespace, Name: loopNamespace}, q); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		_, counted := q.Status.Used[loopGPU]
		return counted && ok(q.Status.Used), nil
	})
	if err != nil {
		return nil, timedOut(err, "ResourceQuota %s/%s: status.used never reached what the loop waits for (last seen %v)", loopNamespace, loopNamespace, q.Status.Used)
	}
	return q, nil
}

// waitManagerSees waits until mpiguard's cache holds q's status.used: its
// next decision reads the quota from there.
func (d *demo) waitManagerSees(ctx context.Context, q *corev1.ResourceQuota) error {
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		var cached corev1.ResourceQuota
		if err := d.env.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(q), &cached); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return quantity(cached.Status.Used, loopGPU) == quantity(q.Status.Used, loopGPU), nil
	})
	return timedOut(err, "mpiguard's cache never saw the quota's status")
}

// waitFinished waits until TrainJob job is Complete.
func (d *demo) waitFinished(ctx context.Context, job string) error {
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		var tj trainer.TrainJob
		if err := d.env.Client.Get(ctx, client.ObjectKey{Namespace: loopNamespace, Name: job}, &tj); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if meta.IsStatusConditionTrue(tj.Status.Conditions, trainer.TrainJobFailed) {
			return false, fmt.Errorf("TrainJob %s/%s failed: %s", loopNamespace, job, meta.FindStatusCondition(tj.Status.Conditions, trainer.TrainJobFailed).Message)
		}
		return meta.IsStatusConditionTrue(tj.Status.Conditions, trainer.TrainJobComplete), nil
	})
	return timedOut(err, "TrainJob %s/%s never finished", loopNamespace, job)
}

func quantity(list corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := list[name]
	if !ok {
		return "?"
	}
	return q.String()
}
