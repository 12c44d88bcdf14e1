// Package follow follows every MPI TrainJob from its admission to its end and
// tells, with Events on the TrainJob, why it does not start (its pods wait:
// unschedulable, Jobs not created, gang waiting, Kueue holding it) and why
// it failed (which Launcher or Worker pod, and why). internal/diagnosis
// decides what to say; this package reads the cluster and says it.
package follow

import (
	"context"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/diagnosis"
	"github.com/mpiguard/mpiguard/internal/engine"
)

// ControllerName names the controller in logs and as the Events' reporter.
const ControllerName = "mpiguard-follow"

// Options configures the follower.
type Options struct {
	// Enabled runs it (on the elected leader, as every controller).
	Enabled bool
	// Interval is the least time between two Events that say the same
	// waiting state of a job.
	Interval time.Duration
	// Settle is how long a new waiting state must hold before it is told:
	// the scheduler marks a gang's pods unschedulable one by one, and the
	// state it settles in ("2 of 6 Workers unschedulable") is one Event,
	// not one per pod on the way.
	Settle time.Duration
	// Parameter reads a policy parameter of the serving policy set
	// (engine.Engine.Parameter): the max-duration policy's warnAtPercent
	// says when a job is warned that its deadline nears. nil: the embedded
	// policy's default.
	Parameter func(policy, name string) (any, bool)
}

// DefaultOptions runs the follower, telling a waiting state once it has
// held 5 s, and again every 30 s while it holds.
func DefaultOptions() Options {
	return Options{Enabled: true, Interval: 30 * time.Second, Settle: 5 * time.Second}
}

// AddFlags binds the follower's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, "follow-jobs", o.Enabled, "Follow every MPI TrainJob until it ends and put Events on it saying why its pods wait or which pod failed and why (on the elected leader).")
	fs.DurationVar(&o.Interval, "follow-interval", o.Interval, "Least time between two Events that repeat the same waiting state of a job.")
	fs.DurationVar(&o.Settle, "follow-settle", o.Settle, "How long a new waiting state of a job must hold before it is told (the scheduler's passes over a gang's pods settle in one state).")
}

// RBAC (ClusterRole: TrainJobs live in every namespace):
//
// Follows every TrainJob; never writes it.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch
// Its runtime says whether it is MPI.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=clustertrainingruntimes;trainingruntimes,verbs=get;list;watch
// Its Launcher and Worker pods.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// Read live, while they matter: the JobSet (the pods it makes, its failure),
// its Jobs (which failed first), the Warning events on them (pods the
// apiserver refused: FailedCreate) and on the TrainJob (what was told
// already, after a restart).
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=list
// +kubebuilder:rbac:groups="",resources=events,verbs=list
// Kueue's Workload of a job Kueue holds; the PodGroup of a gang.
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=list
// +kubebuilder:rbac:groups=scheduling.x-k8s.io;scheduling.volcano.sh,resources=podgroups,verbs=get
// The template of the job's NetworkPolicy, when its Launcher failed.
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get
// Events on the TrainJob, in its namespace: written (create), and a
// waiting state told again counted in its Event's series (patch).
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler follows one TrainJob per request.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	events    eventWriter
	opts      Options
	now       func() time.Time
	// started: a job that finished before it is not told about (its
	// failures were told by the leader of then, or by nobody).
	started time.Time
	// gpus accounts the GPU-seconds of the jobs' pods while this process
	// leads.
	gpus *gpuLedger

	mu   sync.Mutex
	jobs map[types.NamespacedName]*followed
}

// followed is what the follower remembers of a job, for this process's life
// (a new leader learns what was told from the TrainJob's Events).
type followed struct {
	uid types.UID
	// told are the failures told, by diagnosis.Finding.Key.
	told map[string]bool
	// seeded: told was read from the TrainJob's Events.
	seeded bool
	// waitingKey and waitingAt are the waiting state last told and when;
	// waiting the Event that told it.
	waitingKey string
	waitingAt  time.Time
	waiting    told
	// seenKey and seenAt are the waiting state observed last and since
	// when (Options.Settle).
	seenKey string
	seenAt  time.Time
	// quiet: the job had ended before the follower started; it is only
	// counted in the metrics, nothing is told about it.
	quiet bool
	// metrics is what the job counts for in the follower's metrics.
	metrics jobMetrics
}

// SetupWithManager registers the follower when opts.Enabled.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if !opts.Enabled {
		return nil
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultOptions().Interval
	}
	r := &Reconciler{client: mgr.GetClient(), apiReader: mgr.GetAPIReader(), events: newEventWriter(mgr.GetClient()),
		opts: opts, now: time.Now, started: time.Now(), gpus: newGPULedger(time.Now), jobs: map[types.NamespacedName]*followed{}}
	// On the elected leader, as the controller: its GPU-seconds window opens
	// when it is elected and closes when it stops leading.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		r.gpus.lead(time.Now())
		<-ctx.Done()
		r.gpus.stop(time.Now())
		return nil
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("follow").
		// Every change of a TrainJob: its suspension, its Complete and Failed
		// conditions, its deletion (forget it).
		For(&trainer.TrainJob{}).
		// Its Launcher and Worker pods, by the JobSet the Trainer names after
		// it: each scheduling, pull, start and end re-judges the job.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToTrainJob)).
		Complete(r)
}

func podToTrainJob(_ context.Context, o client.Object) []reconcile.Request {
	js := o.GetLabels()[jobsetv1alpha2.JobSetNameKey]
	if js == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: js}}}
}

// Reconcile judges one TrainJob and tells what is new.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var job trainer.TrainJob
	if err := r.client.Get(ctx, req.NamespacedName, &job); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	mpi, err := IsMPI(ctx, r.client, &job)
	if err != nil || !mpi {
		return ctrl.Result{}, err
	}
	f := r.state(req.NamespacedName, &job)
	if f.quiet {
		phase := diagnosis.PhaseFailed
		if meta.IsStatusConditionTrue(job.Status.Conditions, trainer.TrainJobComplete) {
			phase = diagnosis.PhaseSucceeded
		}
		r.count(&job, f, nil, phase, true)
		return ctrl.Result{}, nil
	}
	o, err := Observe(ctx, Readers{Cached: r.client, Live: r.apiReader}, &job)
	if err != nil {
		return ctrl.Result{}, err
	}
	phase := o.Phase()
	r.count(&job, f, &o, phase, false)

	// Failures, and the Warning that the deadline nears, are told once per
	// job (across leader changes: seed reads what the job's Events say).
	findings := o.Failures()
	near, nearDue := o.DeadlineNear(r.now(), r.warnAtPercent())
	if near != nil {
		findings = append(findings, *near)
	}
	if len(findings) > 0 {
		if err := r.seed(ctx, &job, f, findings); err != nil {
			return ctrl.Result{}, err
		}
		for _, fd := range findings {
			if !r.markTold(f, fd.Key) {
				continue
			}
			if _, err := r.events.create(ctx, &job, fd.Type, fd.Reason, fd.Message, r.now()); err != nil {
				r.unmarkTold(f, fd.Key)
				return ctrl.Result{}, err
			}
		}
	}
	// Come back when the deadline Warning becomes due.
	var res ctrl.Result
	if !nearDue.IsZero() {
		res.RequeueAfter = max(nearDue.Sub(r.now()), time.Second)
	}
	switch phase {
	case diagnosis.PhaseWaiting:
		w := o.Waiting()
		if w == nil {
			return sooner(res, r.opts.Interval), nil
		}
		now := r.now()
		r.mu.Lock()
		if w.Key != f.seenKey {
			f.seenKey, f.seenAt = w.Key, now
		}
		unsettled := r.opts.Settle - now.Sub(f.seenAt)
		isNew := w.Key != f.waitingKey
		due := isNew || now.Sub(f.waitingAt) >= r.opts.Interval
		last := f.waiting
		r.mu.Unlock()
		if isNew && unsettled > 0 {
			return sooner(res, max(unsettled, time.Second)), nil
		}
		wait := r.opts.Interval - now.Sub(f.waitingAt)
		if due {
			if err := r.tellWaiting(ctx, &job, f, w, last, now); err != nil {
				return ctrl.Result{}, err
			}
			wait = r.opts.Interval
		}
		return sooner(res, max(wait, time.Second)), nil
	default:
		r.mu.Lock()
		f.waitingKey, f.waiting, f.seenKey = "", told{}, ""
		r.mu.Unlock()
	}
	return res, nil
}

// sooner is res, requeued after d unless it already is sooner.
func sooner(res ctrl.Result, d time.Duration) ctrl.Result {
	if res.RequeueAfter == 0 || d < res.RequeueAfter {
		res.RequeueAfter = d
	}
	return res
}

// defaultWarnAtPercent is the embedded max-duration policy's default
// warnAtPercent, read once.
var defaultWarnAtPercent = sync.OnceValues(func() (any, bool) {
	return engine.DefaultParameter("max-duration", "warnAtPercent")
})

// warnAtPercent is the max-duration policy's warnAtPercent now (0: the
// Warning is off, also when the parameter cannot be read).
func (r *Reconciler) warnAtPercent() float64 { return warnAtPercent(r.opts.Parameter) }

// warnAtPercent is the max-duration policy's warnAtPercent read with
// parameter (nil: the embedded policy's default); 0 when it cannot be read.
func warnAtPercent(parameter func(policy, name string) (any, bool)) float64 {
	v, ok := defaultWarnAtPercent()
	if parameter != nil {
		v, ok = parameter("max-duration", "warnAtPercent")
	}
	if !ok {
		return 0
	}
	switch n := v.(type) {
	case float64:
		return n
	case int64:
		return float64(n)
	case int:
		return float64(n)
	}
	return 0
}

// tellWaiting says the job's waiting state: the same note as last time is
// one more in that Event's series, another is a new Event.
func (r *Reconciler) tellWaiting(ctx context.Context, job *trainer.TrainJob, f *followed, w *diagnosis.Finding, last told, now time.Time) error {
	next := told{note: note(w.Message), count: 1}
	if last.name != "" && last.note == next.note && f.waitingKey == w.Key {
		next = told{name: last.name, note: last.note, count: last.count + 1}
		ok, err := r.events.repeat(ctx, job.Namespace, last.name, next.count, now)
		if err != nil {
			return err
		}
		if !ok {
			next = told{note: next.note, count: 1}
		}
	}
	if next.name == "" {
		name, err := r.events.create(ctx, job, w.Type, w.Reason, w.Message, now)
		if err != nil {
			return err
		}
		next.name = name
	}
	r.mu.Lock()
	f.waitingKey, f.waitingAt, f.waiting = w.Key, now, next
	r.mu.Unlock()
	return nil
}

// state is the job's record, made at first sight: quiet for a job that
// ended before the follower started (nothing new to tell about it).
func (r *Reconciler) state(key types.NamespacedName, job *trainer.TrainJob) *followed {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.jobs[key]; ok && f.uid == job.UID {
		return f
	}
	if old, ok := r.jobs[key]; ok {
		r.uncount(old)
	}
	f := &followed{uid: job.UID, told: map[string]bool{}}
	for _, c := range job.Status.Conditions {
		if (c.Type == trainer.TrainJobComplete || c.Type == trainer.TrainJobFailed) && c.Status == metav1.ConditionTrue && c.LastTransitionTime.Time.Before(r.started) {
			f.quiet = true
		}
	}
	r.jobs[key] = f
	return f
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.jobs[key]; ok {
		r.uncount(f)
		delete(r.jobs, key)
	}
}

// unmarkTold forgets a failure whose Event could not be written: the next
// reconcile tries again.
func (r *Reconciler) unmarkTold(f *followed, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(f.told, key)
}

// markTold records a failure as told; false if it was already.
func (r *Reconciler) markTold(f *followed, key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.told[key] {
		return false
	}
	f.told[key] = true
	return true
}

// seed learns, once per job and process, which of findings the TrainJob's
// Events already tell (a previous leader told them): the same finding gives
// the same note, so it is not told twice across a leader change. A finding
// that appears later was not told by anyone before this process, since the
// process leads (only the leader follows).
func (r *Reconciler) seed(ctx context.Context, job *trainer.TrainJob, f *followed, findings []diagnosis.Finding) error {
	r.mu.Lock()
	seeded := f.seeded
	r.mu.Unlock()
	if seeded {
		return nil
	}
	var list corev1.EventList
	if err := r.apiReader.List(ctx, &list, client.InNamespace(job.Namespace), client.MatchingFields{"involvedObject.uid": string(job.UID)}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, fd := range findings {
		fd.Message = note(fd.Message) // as an Event keeps it
		for _, e := range list.Items {
			if diagnosis.Recorded(fd, e.Reason, e.Message) {
				f.told[fd.Key] = true
				break
			}
		}
	}
	f.seeded = true
	return nil
}

// maxNote is the events API's limit on a note (1 kB).
const maxNote = 1024

// note fits a message in an Event's note, cut at a rune boundary.
func note(msg string) string {
	if len(msg) <= maxNote {
		return msg
	}
	cut := maxNote - len("…")
	for cut > 0 && (msg[cut]&0xC0) == 0x80 {
		cut--
	}
	return msg[:cut] + "…"
}
