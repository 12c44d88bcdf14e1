package follow

import (
	"fmt"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mpiguard/mpiguard/internal/diagnosis"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testJob(ns, name, runtime string) *trainer.TrainJob {
	return &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), CreationTimestamp: metav1.NewTime(t0)},
		Spec: trainer.TrainJobSpec{RuntimeRef: trainer.RuntimeRef{Name: runtime}}}
}

func gpuPod(uid string, gpus int64, phase corev1.PodPhase, started time.Time) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid), Labels: map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "node"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: phase, StartTime: &metav1.Time{Time: started}}}
}

func newTestReconciler(now *time.Time) *Reconciler {
	return &Reconciler{now: func() time.Time { return *now }, started: t0, gpus: newGPULedger(func() time.Time { return *now }), jobs: map[types.NamespacedName]*followed{}}
}

// TestJobMetrics follows one job through its phases: its phase series moves,
// its start is timed once, its end counted once with its reason, and its
// GPU-seconds are its pods' GPUs times the time they ran.
func TestJobMetrics(t *testing.T) {
	now := t0
	r := newTestReconciler(&now)
	job := testJob("metrics-a", "llama", "mpiguard-openmpi")
	f := r.state(types.NamespacedName{Namespace: "metrics-a", Name: "llama"}, job)
	phase := func(p string) float64 {
		return testutil.ToFloat64(jobsByPhase.WithLabelValues("metrics-a", "mpiguard-openmpi", p))
	}
	gpuSeconds := func() float64 {
		var v float64
		ms, _ := metrics.Registry.Gather()
		for _, m := range ms {
			if m.GetName() == "mpiguard_job_gpu_seconds_total" {
				for _, s := range m.GetMetric() {
					if s.GetLabel()[0].GetValue() == "metrics-a" {
						v = s.GetCounter().GetValue()
					}
				}
			}
		}
		return v
	}

	o := &diagnosis.Observation{ExpectedWorkers: 2, ExpectedLaunchers: 0}
	r.count(job, f, o, diagnosis.PhaseWaiting, false)
	if phase("waiting") != 1 {
		t.Errorf("waiting = %v, want 1", phase("waiting"))
	}

	now = t0.Add(90 * time.Second)
	o.Pods.Workers = []corev1.Pod{gpuPod("w0", 8, corev1.PodRunning, now), gpuPod("w1", 8, corev1.PodRunning, now)}
	r.count(job, f, o, diagnosis.PhaseRunning, false)
	r.count(job, f, o, diagnosis.PhaseRunning, false) // a second look changes nothing
	if phase("waiting") != 0 || phase("running") != 1 {
		t.Errorf("waiting, running = %v, %v; want 0, 1", phase("waiting"), phase("running"))
	}
	if n := testutil.CollectAndCount(timeToRunning); n != 1 {
		t.Errorf("time-to-running series = %d, want 1", n)
	}

	now = now.Add(time.Hour)
	if got := gpuSeconds(); got != 16*3600 {
		t.Errorf("GPU-seconds while running = %v, want %v", got, 16*3600)
	}
	o.Pods.Workers[0].Status.Phase = corev1.PodFailed
	o.Pods.Workers[0].Status.Reason = "Evicted"
	o.JobSetFailed = &metav1.Condition{Type: "Failed", Status: "True"}
	r.count(job, f, o, diagnosis.PhaseFailed, false)
	now = now.Add(time.Hour) // w1 still runs
	if got := gpuSeconds(); got != 8*3600+8*7200 {
		t.Errorf("GPU-seconds = %v, want %v", got, 8*3600+8*7200)
	}
	if v := testutil.ToFloat64(completions.WithLabelValues("metrics-a", "mpiguard-openmpi", "failed", diagnosis.ReasonEvicted)); v != 1 {
		t.Errorf("completions{failed, Evicted} = %v, want 1", v)
	}
	r.forget(types.NamespacedName{Namespace: "metrics-a", Name: "llama"})
	if phase("failed") != 0 {
		t.Errorf("a deleted job still counts as failed")
	}
	before := gpuSeconds()
	now = now.Add(time.Hour)
	if got := gpuSeconds(); got != before {
		t.Errorf("GPU-seconds grew after the job went: %v -> %v", before, got)
	}
}

// TestSeriesCount: 10,000 jobs in 1,000 namespaces, on 2 runtimes, through
// every phase, make series per namespace and runtime, not per job
// (docs/operations.md, "Metrics of the jobs").
func TestSeriesCount(t *testing.T) {
	now := t0
	r := newTestReconciler(&now)
	const namespaces, perNamespace = 1000, 10
	for n := range namespaces {
		ns := fmt.Sprintf("series-%d", n)
		for j := range perNamespace {
			job := testJob(ns, fmt.Sprint(j), []string{"mpiguard-openmpi", "mpiguard-mpich"}[j%2])
			f := r.state(types.NamespacedName{Namespace: ns, Name: job.Name}, job)
			o := &diagnosis.Observation{ExpectedWorkers: 1}
			now = now.Add(time.Millisecond)
			r.count(job, f, o, diagnosis.PhaseWaiting, false)
			o.Pods.Workers = []corev1.Pod{gpuPod(ns+"/"+job.Name, 8, corev1.PodRunning, now)}
			r.count(job, f, o, diagnosis.PhaseRunning, false)
			end := diagnosis.PhaseSucceeded
			if j%3 == 0 {
				end = diagnosis.PhaseFailed
				o.Pods.Workers[0].Status.Phase = corev1.PodFailed
				o.Pods.Workers[0].Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}
			}
			o.TrainJobComplete = &metav1.Condition{}
			r.count(job, f, o, end, false)
		}
	}
	ms, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	total := 0
	for _, m := range ms {
		switch m.GetName() {
		case "mpiguard_jobs", "mpiguard_job_completions_total", "mpiguard_job_gpu_seconds_total", "mpiguard_job_time_to_running_seconds":
		default:
			continue
		}
		for _, s := range m.GetMetric() {
			if len(s.GetLabel()) == 0 || len(s.GetLabel()[0].GetValue()) < 7 || s.GetLabel()[0].GetValue()[:7] != "series-" {
				continue
			}
			n := 1
			if h := s.GetHistogram(); h != nil {
				n = len(h.GetBucket()) + 3 // the buckets, +Inf, _sum, _count
			}
			series[m.GetName()] += n
			total += n
		}
	}
	t.Logf("series for %d jobs in %d namespaces on 2 runtimes: %d %v", namespaces*perNamespace, namespaces, total, series)
	// Per namespace and runtime: 4 phases at most, the histogram's 13, one
	// GPU counter, and one completion series per outcome and reason seen.
	perPair := 4 + 13 + 1 + 2
	if limit := namespaces * 2 * perPair; total > limit {
		t.Errorf("%d series, more than %d (%d per namespace and runtime)", total, limit, perPair)
	}
}

// podRun is a pod with gpus GPUs whose container started at start and, if
// end is not zero, finished at end.
func podRun(uid string, gpus int64, start, end time.Time) corev1.Pod {
	p := gpuPod(uid, gpus, corev1.PodRunning, start.Add(-10*time.Second))
	st := corev1.ContainerStatus{Name: "node", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}}}
	if !end.IsZero() {
		p.Status.Phase = corev1.PodSucceeded
		st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(start), FinishedAt: metav1.NewTime(end)}}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
	return p
}

// TestGPUSecondsAcrossALeaderChange: two followers (the old leader, stopped
// when it loses its lease, and the new one, which starts following a lease
// duration later) account the same pods. Summed, as sum(increase()) over
// the replicas' series does, they count every interval once: the truth less
// what ran between the old leader's stop and the new leader's start, never
// more. Each pod's time comes from the pod's own container times, so the
// new leader accounts a pod the old one saw start, and one that ended while
// nobody led, without counting twice.
func TestGPUSecondsAcrossALeaderChange(t *testing.T) {
	lb := labels{"handover", "mpiguard-openmpi"}
	h := func(d float64) time.Time { return t0.Add(time.Duration(d * float64(time.Hour))) }
	stopAt := t0.Add(70 * time.Minute)      // the old leader stops leading
	startAt := stopAt.Add(15 * time.Second) // the new leader's first reconcile
	type pod struct {
		uid        string
		gpus       int64
		start, end time.Time
	}
	pods := []pod{
		{"a", 8, t0, h(3)},     // runs across the change
		{"b", 4, h(1), h(2.5)}, // starts before it, ends after
		{"c", 2, t0.Add(30 * time.Minute), stopAt.Add(5 * time.Second)}, // ends while nobody leads
		{"d", 1, h(2), h(2.75)},    // only the new leader sees it
		{"e", 16, h(0.25), h(0.5)}, // only the old leader sees it
	}
	// at says the pods as they stand at time now.
	at := func(now time.Time) []corev1.Pod {
		var out []corev1.Pod
		for _, p := range pods {
			switch {
			case now.Before(p.start):
			case now.Before(p.end):
				out = append(out, podRun(p.uid, p.gpus, p.start, time.Time{}))
			default:
				out = append(out, podRun(p.uid, p.gpus, p.start, p.end))
			}
		}
		return out
	}
	var truth, gap float64
	for _, p := range pods {
		truth += float64(p.gpus) * p.end.Sub(p.start).Seconds()
		gap += float64(p.gpus) * overlapSeconds(p.start, p.end, stopAt, startAt)
	}

	now := h(-1)
	clock := func() time.Time { return now }
	old, next := newGPULedger(clock), newGPULedger(clock)
	old.lead(now)
	var oldPods, nextPods map[types.UID]bool
	for now = h(-1); now.Before(stopAt); now = now.Add(4 * time.Minute) {
		oldPods = old.track(lb, at(now), oldPods, now)
	}
	now = stopAt
	old.track(lb, at(now), oldPods, now)
	old.stop(now)
	for now = startAt; !now.After(h(4)); now = now.Add(3 * time.Minute) {
		nextPods = next.track(lb, at(now), nextPods, now)
	}
	total := map[labels]float64{}
	old.values(total)
	oldTotal := total[lb]
	next.values(total)
	if got, want := total[lb], truth-gap; got != want {
		t.Errorf("GPU-seconds summed over both leaders = %v, want %v (the truth %v less %v while nobody led)", got, want, truth, gap)
	}
	if total[lb] > truth {
		t.Errorf("GPU-seconds %v exceed the truth %v: an interval counted twice", total[lb], truth)
	}
	// The old leader's series no longer grows once it stopped leading.
	now = h(5)
	again := map[labels]float64{}
	old.values(again)
	if again[lb] != oldTotal {
		t.Errorf("the old leader's GPU-seconds grew after it stopped leading: %v -> %v", oldTotal, again[lb])
	}
}

func TestRunInterval(t *testing.T) {
	running := podRun("r", 1, t0, time.Time{})
	start, end, ended, ran := runInterval(&running)
	if !ran || ended || !start.Equal(t0) || !end.IsZero() {
		t.Errorf("running pod: %v %v %v %v", start, end, ended, ran)
	}
	done := podRun("d", 1, t0, t0.Add(time.Hour))
	start, end, ended, ran = runInterval(&done)
	if !ran || !ended || !start.Equal(t0) || !end.Equal(t0.Add(time.Hour)) {
		t.Errorf("ended pod: %v %v %v %v", start, end, ended, ran)
	}
	pending := gpuPod("p", 1, corev1.PodPending, t0)
	if _, _, _, ran := runInterval(&pending); ran {
		t.Error("a pending pod ran")
	}
	restarted := podRun("x", 1, t0.Add(time.Hour), time.Time{})
	restarted.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(t0), FinishedAt: metav1.NewTime(t0.Add(59 * time.Minute))}
	if start, _, _, _ := runInterval(&restarted); !start.Equal(t0) {
		t.Errorf("a restarted container's pod starts at %v, want its first start %v", start, t0)
	}
}
