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
	gpus.now = func() time.Time { return *now }
	return &Reconciler{now: func() time.Time { return *now }, started: t0, jobs: map[types.NamespacedName]*followed{}}
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
