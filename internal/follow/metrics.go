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

// gpuSeconds serves mpiguard_job_gpu_seconds_total from the followers'
// ledgers (one per process as shipped).
var gpuSeconds = newGPUCollector()

func init() {
	metrics.Registry.MustRegister(timeToRunning, jobsByPhase, completions, gpuSeconds)
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
	// pods are its pods in the GPU ledger: true while it counts one running,
	// false once it accounted the pod's end.
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
		m.pods = r.gpus.track(m.labels, o.Pods.All(), m.pods, now)
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
	m.pods = r.gpus.track(m.labels, nil, m.pods, r.now())
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

// GPU-seconds across leader changes. Only the leader follows jobs, so only
// it accounts GPU-seconds, and it accounts only time while it leads: a pod's
// running interval, read from the pod itself (its containers' start and
// finish times, so any leader can account it), clipped to [from, until):
// from is when this process began to follow as leader (its first
// reconcile, after it acquired the lease), until when it stopped (its
// leader context ended; zero while it leads). Leases do not overlap, so
// neither do the replicas' windows: sum(increase()) over the replicas' series
// counts no interval twice. What runs between the old leader's last scrape
// and the new leader's first reconcile is not counted (docs/operations.md,
// "Metrics of the jobs"). A new process's counter starts at zero, which
// Prometheus's increase() reads as a counter reset.
type gpuLedger struct {
	mu          sync.Mutex
	from, until time.Time
	// done is the GPU-seconds of the pods whose end was accounted, running
	// the pods counting now.
	done    map[labels]float64
	running map[types.UID]runningPod
	now     func() time.Time
}

type runningPod struct {
	labels labels
	gpus   float64
	since  time.Time
}

func newGPULedger(now func() time.Time) *gpuLedger {
	l := &gpuLedger{done: map[labels]float64{}, running: map[types.UID]runningPod{}, now: now}
	gpuSeconds.add(l)
	return l
}

// lead starts the ledger's window, once: the first call wins.
func (l *gpuLedger) lead(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.from.IsZero() {
		l.from = now
	}
}

// stop ends the ledger's window: the process no longer leads, and counts
// nothing after now.
func (l *gpuLedger) stop(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.until.IsZero() {
		l.until = now
	}
}

// track updates the ledger with a job's pods: a pod that runs counts from
// its start (not before the window); one that ended adds its interval
// within the window once; one that is gone while counting adds until now.
// was are the job's pods the ledger knew; it returns them now.
func (l *gpuLedger) track(lb labels, pods []corev1.Pod, was map[types.UID]bool, now time.Time) map[types.UID]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.from.IsZero() {
		l.from = now
	}
	is := map[types.UID]bool{}
	for i := range pods {
		p := &pods[i]
		n := gpuRequests(p)
		if n == 0 {
			continue
		}
		if counting, known := was[p.UID]; known && !counting {
			is[p.UID] = false // its end was accounted
			continue
		}
		start, end, ended, ran := runInterval(p)
		if !ran {
			continue
		}
		rp, counting := l.running[p.UID]
		if ended && end.IsZero() {
			// Its end untold: when it was seen ended, or nothing for a
			// pod this leader never saw run.
			end = now
			if !counting {
				end = start
			}
		}
		switch {
		case !ended:
			if !counting {
				l.running[p.UID] = runningPod{labels: lb, gpus: n, since: later(start, l.from)}
			}
			is[p.UID] = true
		case counting:
			l.add(rp.labels, rp.gpus, rp.since, end)
			delete(l.running, p.UID)
			is[p.UID] = false
		default:
			l.add(lb, n, start, end)
			is[p.UID] = false
		}
	}
	for uid, counting := range was {
		if _, seen := is[uid]; seen || !counting {
			continue
		}
		if rp, ok := l.running[uid]; ok {
			l.add(rp.labels, rp.gpus, rp.since, now)
			delete(l.running, uid)
		}
	}
	return is
}

// add accounts gpus over [start, end) within the ledger's window.
func (l *gpuLedger) add(lb labels, gpus float64, start, end time.Time) {
	l.done[lb] += gpus * overlapSeconds(start, end, l.from, l.until)
}

// values are the ledger's GPU-seconds by labels at now.
func (l *gpuLedger) values(total map[labels]float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for lb, v := range l.done {
		total[lb] += v
	}
	for _, rp := range l.running {
		total[rp.labels] += rp.gpus * overlapSeconds(rp.since, now, l.from, l.until)
	}
}

// overlapSeconds is how long [start, end) lies within [from, until) (until
// zero: unbounded), in seconds; 0 when they do not meet.
func overlapSeconds(start, end, from, until time.Time) float64 {
	start = later(start, from)
	if !until.IsZero() && until.Before(end) {
		end = until
	}
	if !end.After(start) {
		return 0
	}
	return end.Sub(start).Seconds()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// runInterval is when the pod ran, from its own status: start is the
// earliest start of its containers (current or last state; the pod's
// startTime when they tell none); ended says the pod ended, end the latest
// finish of its containers (zero when none tells it: a pod the kubelet
// failed as a whole, evicted). ran is false for a pod that never ran
// (pending, or refused).
func runInterval(p *corev1.Pod) (start, end time.Time, ended, ran bool) {
	for _, st := range p.Status.ContainerStatuses {
		for _, s := range []corev1.ContainerState{st.State, st.LastTerminationState} {
			var t metav1.Time
			switch {
			case s.Running != nil:
				t = s.Running.StartedAt
			case s.Terminated != nil:
				t = s.Terminated.StartedAt
			}
			if !t.IsZero() && (start.IsZero() || t.Time.Before(start)) {
				start = t.Time
			}
		}
	}
	switch p.Status.Phase {
	case corev1.PodRunning:
	case corev1.PodSucceeded, corev1.PodFailed:
		ended, end = true, finished(p)
	default:
		return time.Time{}, time.Time{}, false, false
	}
	if start.IsZero() && p.Status.StartTime != nil {
		start = p.Status.StartTime.Time
	}
	if start.IsZero() {
		return time.Time{}, time.Time{}, false, false
	}
	if ended && !end.IsZero() && end.Before(start) {
		end = start
	}
	return start, end, ended, true
}

// gpuCollector is mpiguard_job_gpu_seconds_total: the sum of its ledgers
// (one per follower: one per process as shipped; the in-process replicas of
// the integration suites each have their own).
type gpuCollector struct {
	mu      sync.Mutex
	ledgers []*gpuLedger
	desc    *prometheus.Desc
}

func newGPUCollector() *gpuCollector {
	return &gpuCollector{desc: prometheus.NewDesc("mpiguard_job_gpu_seconds_total",
		"GPU-seconds the Launcher and Worker pods of MPI TrainJobs consumed while this replica led: each pod's GPU requests (resources named */gpu) times the time it ran.",
		[]string{"namespace", "runtime"}, nil)}
}

func (c *gpuCollector) add(l *gpuLedger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ledgers = append(c.ledgers, l)
}

// Describe implements prometheus.Collector.
func (c *gpuCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *gpuCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	ledgers := append([]*gpuLedger(nil), c.ledgers...)
	c.mu.Unlock()
	total := map[labels]float64{}
	for _, l := range ledgers {
		l.values(total)
	}
	for lb, v := range total {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, v, lb.namespace, lb.runtime)
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
