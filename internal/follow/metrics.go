package follow

import (
	"strings"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mpiguard/mpiguard/internal/diagnosis"
)

// The metrics of the MPI TrainJobs the follower follows, labelled by
// namespace and runtime (the TrainJob's runtimeRef name) only: no label
// names a job or a pod, so their number grows with namespaces and runtimes,
// not jobs (docs/operations.md, "Metrics of the jobs").
var (
	timeToRunning = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mpiguard_job_time_to_running_seconds",
		Help:    "Time from a MPI TrainJob's admission (its creation, or its resume by Kueue) until its Launcher and every Worker pod run.",
		Buckets: []float64{10, 30, 60, 120, 300, 600, 1800, 3600, 3 * 3600, 12 * 3600},
	}, []string{"namespace", "runtime"})
	jobsByPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mpiguard_jobs",
		Help: "MPI TrainJobs by phase: waiting (admitted, not every pod runs; Kueue's held ones too), running, succeeded, failed (until deleted).",
	}, []string{"namespace", "runtime", "phase"})
	completions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mpiguard_job_completions_total",
		Help: "MPI TrainJobs that ended, by outcome (succeeded, failed) and reason: Completed, or the first reason the follower gave (OOMKilled, LauncherSSHFailed, ...), else the TrainJob's Failed reason.",
	}, []string{"namespace", "runtime", "outcome", "reason"})
)

// gpus adds up the GPU-seconds of running pods at every scrape.
var gpus = newGPULedger()

func init() {
	metrics.Registry.MustRegister(timeToRunning, jobsByPhase, completions, gpus)
}

// labels are a job's metric labels.
type labels struct{ namespace, runtime string }

// jobMetrics is what one job counts for.
type jobMetrics struct {
	labels labels
	// phase is the phase it is counted in ("": none).
	phase diagnosis.Phase
	// sawWaiting: this process saw it wait, so it may time its start.
	sawWaiting, timed bool
	// pods are its running pods in the GPU ledger.
	pods map[types.UID]bool
}

// count moves the job to its phase's series, times its start, counts its
// end, and keeps its running pods in the GPU ledger.
func (r *Reconciler) count(job *trainer.TrainJob, f *followed, o *diagnosis.Observation, phase diagnosis.Phase, quiet bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &f.metrics
	m.labels = labels{job.Namespace, job.Spec.RuntimeRef.Name}
	counted := phase
	if phase == diagnosis.PhaseSuspended {
		counted = ""
	}
	if counted != m.phase {
		if m.phase != "" {
			jobsByPhase.WithLabelValues(m.labels.namespace, m.labels.runtime, string(m.phase)).Dec()
		}
		if counted != "" {
			jobsByPhase.WithLabelValues(m.labels.namespace, m.labels.runtime, string(counted)).Inc()
		}
		if !quiet && m.phase != "" && (counted == diagnosis.PhaseSucceeded || counted == diagnosis.PhaseFailed) {
			completions.WithLabelValues(m.labels.namespace, m.labels.runtime, string(counted), completionReason(o, counted)).Inc()
		}
		m.phase = counted
	}
	now := r.now()
	switch phase {
	case diagnosis.PhaseWaiting:
		m.sawWaiting = true
	case diagnosis.PhaseRunning:
		if m.sawWaiting && !m.timed {
			m.timed = true
			timeToRunning.WithLabelValues(m.labels.namespace, m.labels.runtime).Observe(now.Sub(admitted(job)).Seconds())
		}
	}
	if o != nil {
		m.pods = gpus.track(m.labels, o.Pods.All(), m.pods, now, r.started)
	}
}

// uncount drops a job that is gone from its phase's series and the ledger.
// The caller holds r.mu.
func (r *Reconciler) uncount(f *followed) {
	m := &f.metrics
	if m.phase != "" {
		jobsByPhase.WithLabelValues(m.labels.namespace, m.labels.runtime, string(m.phase)).Dec()
		m.phase = ""
	}
	m.pods = gpus.track(m.labels, nil, m.pods, r.now(), r.started)
}

// admitted is when the job could start: its resume (the Trainer's Suspended
// condition turned False), else its creation. The Trainer counts the job's
// spec.activeDeadlineSeconds from the same moment.
func admitted(job *trainer.TrainJob) time.Time {
	if c := meta.FindStatusCondition(job.Status.Conditions, trainer.TrainJobSuspended); c != nil && c.Status == metav1.ConditionFalse {
		return c.LastTransitionTime.Time
	}
	return job.CreationTimestamp.Time
}

// completionReason is Completed, the first reason a pod gave, or the
// TrainJob's Failed reason; "Other" past those, so the label stays bounded.
func completionReason(o *diagnosis.Observation, outcome diagnosis.Phase) string {
	if outcome == diagnosis.PhaseSucceeded {
		return "Completed"
	}
	if o != nil {
		for _, f := range o.Failures() {
			if f.Reason != diagnosis.ReasonJobSetFailed {
				return f.Reason
			}
		}
		if c := o.TrainJobFailed; c != nil && c.Reason == diagnosis.ReasonDeadlineExceeded {
			return c.Reason
		}
		if o.JobSetFailed != nil || o.TrainJobFailed != nil {
			return diagnosis.ReasonJobSetFailed
		}
	}
	return "Other"
}

// gpuLedger is mpiguard_job_gpu_seconds_total: the GPU-seconds of pods
// that ran, plus, at each scrape, those of the pods running now (their GPU
// requests times the time they ran, counted from this process's start at
// the earliest, so a restart does not count a pod's past twice).
type gpuLedger struct {
	mu      sync.Mutex
	done    map[labels]float64
	running map[types.UID]runningPod
	desc    *prometheus.Desc
	now     func() time.Time
}

type runningPod struct {
	labels labels
	gpus   float64
	since  time.Time
}

func newGPULedger() *gpuLedger {
	return &gpuLedger{
		done: map[labels]float64{}, running: map[types.UID]runningPod{}, now: time.Now,
		desc: prometheus.NewDesc("mpiguard_job_gpu_seconds_total",
			"GPU-seconds the Launcher and Worker pods of MPI TrainJobs consumed: each pod's GPU requests (resources named */gpu) times the time it ran.",
			[]string{"namespace", "runtime"}, nil),
	}
}

// track updates the ledger with a job's pods: a pod that runs starts
// counting; one that stopped (or is gone) adds what it ran. It returns the
// job's pods that now count.
func (l *gpuLedger) track(lb labels, pods []corev1.Pod, was map[types.UID]bool, now, started time.Time) map[types.UID]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	is := map[types.UID]bool{}
	for i := range pods {
		p := &pods[i]
		n := gpuRequests(p)
		if n == 0 {
			continue
		}
		rp, counting := l.running[p.UID]
		switch {
		case p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil:
			if !counting {
				since := started
				if p.Status.StartTime != nil && p.Status.StartTime.After(since) {
					since = p.Status.StartTime.Time
				}
				l.running[p.UID] = runningPod{labels: lb, gpus: n, since: since}
			}
			is[p.UID] = true
		case counting:
			end := now
			if t := finished(p); !t.IsZero() && t.Before(now) {
				end = t
			}
			l.close(p.UID, rp, end)
		}
	}
	for uid := range was {
		if rp, ok := l.running[uid]; ok && !is[uid] {
			l.close(uid, rp, now)
		}
	}
	return is
}

func (l *gpuLedger) close(uid types.UID, rp runningPod, end time.Time) {
	if end.After(rp.since) {
		l.done[rp.labels] += rp.gpus * end.Sub(rp.since).Seconds()
	}
	delete(l.running, uid)
}

// Describe implements prometheus.Collector.
func (l *gpuLedger) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

// Collect implements prometheus.Collector.
func (l *gpuLedger) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	total := map[labels]float64{}
	for lb, v := range l.done {
		total[lb] = v
	}
	for _, rp := range l.running {
		if now.After(rp.since) {
			total[rp.labels] += rp.gpus * now.Sub(rp.since).Seconds()
		} else {
			total[rp.labels] += 0
		}
	}
	for lb, v := range total {
		ch <- prometheus.MustNewConstMetric(l.desc, prometheus.CounterValue, v, lb.namespace, lb.runtime)
	}
}

// gpuRequests is what the pod's containers request of resources named
// */gpu (nvidia.com/gpu, amd.com/gpu), their limits where they request none.
func gpuRequests(p *corev1.Pod) float64 {
	var n float64
	for _, c := range p.Spec.Containers {
		for name, q := range c.Resources.Requests {
			if strings.HasSuffix(string(name), "/gpu") {
				n += q.AsApproximateFloat64()
			}
		}
		if len(c.Resources.Requests) == 0 {
			for name, q := range c.Resources.Limits {
				if strings.HasSuffix(string(name), "/gpu") {
					n += q.AsApproximateFloat64()
				}
			}
		}
	}
	return n
}

// finished is when the pod's last container ended, zero if none did.
func finished(p *corev1.Pod) time.Time {
	var t time.Time
	for _, st := range p.Status.ContainerStatuses {
		if tt := st.State.Terminated; tt != nil && tt.FinishedAt.After(t) {
			t = tt.FinishedAt.Time
		}
	}
	return t
}
