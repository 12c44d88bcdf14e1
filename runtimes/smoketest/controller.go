// Package smoketest runs RuntimeTests: it launches a minimal MPI TrainJob on the
// runtime under test, watches its pods, and reports condition by condition
// whether the runtime really works, then removes the TrainJob.
package smoketest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	api "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/diagnosis"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// TrainJobSuffix names the smoke-test TrainJob: <RuntimeTest name>-smoke.
const TrainJobSuffix = "-smoke"

// LabelRuntimeTest marks the smoke-test TrainJob with its RuntimeTest's name.
const LabelRuntimeTest = "mpiguard.io/runtime-test"

// Options configures the RuntimeTest controller.
type Options struct {
	// Enabled runs the controller.
	Enabled bool
	// Poll is how often a running test is re-checked besides watch events (for the timeout).
	Poll time.Duration
}

// DefaultOptions runs the controller.
func DefaultOptions() Options { return Options{Enabled: true, Poll: 10 * time.Second} }

// RBAC (ClusterRole: a RuntimeTest, and so its smoke-test TrainJob, may be in
// any namespace):
//
// Reads RuntimeTests; it never writes their spec or metadata (no update, patch).
// +kubebuilder:rbac:groups=mpiguard.io,resources=runtimetests,verbs=get;list;watch
// Writes the verdict with a status update (no get, patch: reads come from the cache).
// +kubebuilder:rbac:groups=mpiguard.io,resources=runtimetests/status,verbs=update
// The smoke-test TrainJob's controller reference blocks the RuntimeTest's
// deletion (blockOwnerDeletion needs update on the owner's finalizers).
// +kubebuilder:rbac:groups=mpiguard.io,resources=runtimetests/finalizers,verbs=update
// Creates the smoke-test TrainJob, watches it, and deletes it after the verdict.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch;create;delete
// The runtime under test (its MPI implementation and launcher layout).
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=clustertrainingruntimes;trainingruntimes,verbs=get;list;watch
// Watches the smoke-test job's pods (Launcher and Workers) for the verdict.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// Why pods are missing or the job failed, read live (not cached: only
// while a test runs, and only in its namespace): the JobSet's and Jobs'
// Failed conditions, and the Warning events on them, where the Job
// controller records pods the apiserver refused (FailedCreate).
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=list
// +kubebuilder:rbac:groups="",resources=events,verbs=list
// Reads, by name and live (never cached, never listed), the hostfile
// ConfigMap the Trainer renders for the smoke-test job: get only.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// Events on the RuntimeTest, in its namespace.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler drives one RuntimeTest.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	recorder  events.EventRecorder
	poll      time.Duration
	now       func() time.Time
}

// SetupWithManager registers the controller when opts.Enabled.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if !opts.Enabled {
		return nil
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultOptions().Poll
	}
	r := &Reconciler{client: mgr.GetClient(), apiReader: mgr.GetAPIReader(), recorder: mgr.GetEventRecorder("mpiguard-runtimetest"), poll: opts.Poll, now: time.Now}
	return ctrl.NewControllerManagedBy(mgr).
		Named("runtimetest").
		For(&api.RuntimeTest{}).
		Owns(&trainer.TrainJob{}).
		// Pods belong to the JobSet the Trainer names after the TrainJob.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToRuntimeTest)).
		Complete(r)
}

func podToRuntimeTest(_ context.Context, o client.Object) []reconcile.Request {
	js := o.GetLabels()[jobsetv1alpha2.JobSetNameKey]
	name, ok := strings.CutSuffix(js, TrainJobSuffix)
	if !ok || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// Reconcile advances one RuntimeTest.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rt api.RuntimeTest
	if err := r.client.Get(ctx, req.NamespacedName, &rt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if meta.FindStatusCondition(rt.Status.Conditions, api.ConditionSucceeded) != nil {
		return r.cleanup(ctx, &rt)
	}
	before := rt.Status.DeepCopy()

	runtimeSpec, implementation, err := r.runtime(ctx, &rt)
	if err != nil {
		reason := api.ReasonRuntimeNotFound
		if !apierrors.IsNotFound(err) {
			if !errors.As(err, new(notMPIError)) {
				return ctrl.Result{}, err
			}
			reason = api.ReasonNotMPI
		}
		r.finish(&rt, metav1.Condition{Type: api.ConditionSucceeded, Status: metav1.ConditionFalse, Reason: reason, Message: err.Error()})
		return r.writeStatus(ctx, &rt, before)
	}

	job, err := r.ensureTrainJob(ctx, &rt, runtimeSpec, implementation)
	if errors.Is(err, errTrainJobGone) {
		r.finish(&rt, metav1.Condition{Type: api.ConditionSucceeded, Status: metav1.ConditionFalse, Reason: api.ReasonTrainJobFailed,
			Message: fmt.Sprintf("the smoke-test TrainJob %s was deleted before a verdict; delete and re-create the RuntimeTest to test again", trainJobName(&rt))})
		rt.Status.TrainJobDeleted = true
		return r.writeStatus(ctx, &rt, before)
	}
	if err != nil {
		cond := metav1.Condition{Type: api.ConditionJobCreated, Status: metav1.ConditionFalse, Reason: api.ReasonCreateFailed,
			Message: fmt.Sprintf("creating TrainJob %s failed: %v", trainJobName(&rt), err)}
		setConditions(&rt.Status, []metav1.Condition{cond}, rt.Generation)
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			// An admission denial will not change by itself: that is the verdict.
			r.finish(&rt, metav1.Condition{Type: api.ConditionSucceeded, Status: metav1.ConditionFalse, Reason: api.ReasonCreateFailed, Message: cond.Message})
		}
		_, werr := r.writeStatus(ctx, &rt, before)
		if werr != nil {
			return ctrl.Result{}, werr
		}
		return ctrl.Result{}, err
	}

	obs, err := r.observe(ctx, &rt, job, runtimeSpec)
	if err != nil {
		return ctrl.Result{}, err
	}
	v := Evaluate(obs)
	rt.Status.HostsExpected, rt.Status.HostsSeen = obs.HostsExpected, v.HostsSeen
	setConditions(&rt.Status, v.Conditions, rt.Generation)
	rt.Status.Phase = api.PhaseRunning
	if v.Final {
		r.finish(&rt, *meta.FindStatusCondition(rt.Status.Conditions, api.ConditionSucceeded))
	}
	res, err := r.writeStatus(ctx, &rt, before)
	if err != nil || v.Final {
		return res, err
	}
	remaining := rt.Status.StartTime.Add(timeout(&rt)).Sub(r.now())
	return ctrl.Result{RequeueAfter: max(min(remaining, r.poll), time.Second)}, nil
}

// finish records the verdict and an event.
func (r *Reconciler) finish(rt *api.RuntimeTest, verdict metav1.Condition) {
	verdict.ObservedGeneration = rt.Generation
	meta.SetStatusCondition(&rt.Status.Conditions, verdict)
	rt.Status.Phase = api.PhaseFailed
	eventType := corev1.EventTypeWarning
	if verdict.Status == metav1.ConditionTrue {
		rt.Status.Phase = api.PhaseSucceeded
		eventType = corev1.EventTypeNormal
	}
	rt.Status.CompletionTime = ptr.To(metav1.NewTime(r.now()))
	note := fmt.Sprintf("runtime %s: %s", rt.Spec.RuntimeRef.Name, verdict.Message)
	r.recorder.Eventf(rt, nil, eventType, verdict.Reason, "SmokeTest", "%s", truncateNote(note))
	observeVerdict(rt.Spec.RuntimeRef.Name, verdict.Status == metav1.ConditionTrue, verdict.Reason)
}

// maxEventNote is the apiserver's limit on an event's note: a longer one is
// refused and the event lost. The condition keeps the whole message (a
// quoted Pod Security refusal of several containers runs past it).
const maxEventNote = 1024

func truncateNote(s string) string {
	if len(s) <= maxEventNote {
		return s
	}
	const more = "… (see the RuntimeTest's Succeeded condition)"
	cut := maxEventNote - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}

func (r *Reconciler) writeStatus(ctx context.Context, rt *api.RuntimeTest, before *api.RuntimeTestStatus) (ctrl.Result, error) {
	if rt.Status.Phase == "" {
		rt.Status.Phase = api.PhasePending
	}
	if equalStatus(before, &rt.Status) {
		return ctrl.Result{}, nil
	}
	if err := r.client.Status().Update(ctx, rt); err != nil {
		return ctrl.Result{}, err
	}
	if meta.FindStatusCondition(rt.Status.Conditions, api.ConditionSucceeded) != nil {
		return r.cleanup(ctx, rt)
	}
	return ctrl.Result{}, nil
}

// cleanup removes the smoke-test TrainJob once there is a verdict.
func (r *Reconciler) cleanup(ctx context.Context, rt *api.RuntimeTest) (ctrl.Result, error) {
	if rt.Spec.KeepTrainJob || rt.Status.TrainJobDeleted || rt.Status.TrainJobName == "" {
		return ctrl.Result{}, nil
	}
	job := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: rt.Namespace, Name: rt.Status.TrainJobName}}
	err := r.client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	rt.Status.TrainJobDeleted = true
	return ctrl.Result{}, r.client.Status().Update(ctx, rt)
}

var errTrainJobGone = errors.New("smoke-test TrainJob deleted before a verdict")

type notMPIError struct{ msg string }

func (e notMPIError) Error() string { return e.msg }

// runtime reads the runtime under test and its real MPI implementation.
func (r *Reconciler) runtime(ctx context.Context, rt *api.RuntimeTest) (*trainer.TrainingRuntimeSpec, string, error) {
	ref := rt.Spec.RuntimeRef
	var spec trainer.TrainingRuntimeSpec
	var labels map[string]string
	switch ref.Kind {
	case trainer.TrainingRuntimeKind:
		var tr trainer.TrainingRuntime
		if err := r.getRuntime(ctx, client.ObjectKey{Namespace: rt.Namespace, Name: ref.Name}, &tr); err != nil {
			return nil, "", wrapNotFound(err, fmt.Sprintf("TrainingRuntime %s/%s", rt.Namespace, ref.Name))
		}
		spec, labels = tr.Spec, tr.Labels
	default:
		var ctr trainer.ClusterTrainingRuntime
		if err := r.getRuntime(ctx, client.ObjectKey{Name: ref.Name}, &ctr); err != nil {
			return nil, "", wrapNotFound(err, "ClusterTrainingRuntime "+ref.Name)
		}
		spec, labels = ctr.Spec, ctr.Labels
	}
	if spec.MLPolicy == nil || spec.MLPolicy.MPI == nil {
		return nil, "", notMPIError{fmt.Sprintf("runtime %s has no mlPolicy.mpi: RuntimeTest only tests MPI runtimes", ref.Name)}
	}
	impl := labels[catalog.LabelMPIImplementation]
	if impl == "" {
		impl = catalog.ImplementationOpenMPI
	}
	return &spec, impl, nil
}

// getRuntime reads a runtime from the cache and, when the cache does not
// have it, from the apiserver: "not found" ends the test (RuntimeNotFound),
// and a runtime applied together with its RuntimeTest (one `kubectl apply`)
// may not be in the cache yet when the test is first reconciled (seen in the
// runtimes suite under load: the test failed RuntimeNotFound, its runtime
// there).
func (r *Reconciler) getRuntime(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := r.client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = r.apiReader.Get(ctx, key, obj)
	}
	return err
}

func wrapNotFound(err error, what string) error {
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(trainer.GroupVersion.WithResource("runtimes").GroupResource(),
			fmt.Sprintf("%s (not found: create it or fix spec.runtimeRef)", what))
	}
	return err
}

func trainJobName(rt *api.RuntimeTest) string { return rt.Name + TrainJobSuffix }

func timeout(rt *api.RuntimeTest) time.Duration {
	s := rt.Spec.TimeoutSeconds
	if s <= 0 {
		s = 600
	}
	return time.Duration(s) * time.Second
}

func workers(rt *api.RuntimeTest) int32 { return max(rt.Spec.Workers, 1) }

// count writes n things: "1 Worker", "2 Workers" (never "1 Workers").
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// ensureTrainJob creates the smoke-test TrainJob once: 1 launcher + N Workers,
// the launcher running mpirun across all slots.
func (r *Reconciler) ensureTrainJob(ctx context.Context, rt *api.RuntimeTest, spec *trainer.TrainingRuntimeSpec, impl string) (*trainer.TrainJob, error) {
	var job trainer.TrainJob
	err := r.client.Get(ctx, client.ObjectKey{Namespace: rt.Namespace, Name: trainJobName(rt)}, &job)
	if err == nil {
		if !metav1.IsControlledBy(&job, rt) {
			return nil, fmt.Errorf("a TrainJob named %s already exists and does not belong to this RuntimeTest; rename the RuntimeTest", job.Name)
		}
		return &job, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	if rt.Status.StartTime != nil {
		// Created before and not in the cache: ask the apiserver, since the cache
		// may simply not have seen our create yet.
		if err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: rt.Namespace, Name: trainJobName(rt)}, &job); err == nil {
			return &job, nil
		} else if !apierrors.IsNotFound(err) {
			return nil, err
		}
		// Gone: someone deleted it. Re-creating it would silently restart the
		// clock, so that is the verdict.
		return nil, errTrainJobGone
	}
	numNodes := workers(rt)
	if ptr.Deref(spec.MLPolicy.MPI.RunLauncherAsNode, false) {
		// The launcher is one of the nodes; the Trainer creates numNodes-1 Workers.
		numNodes++
	}
	kind := rt.Spec.RuntimeRef.Kind
	if kind == "" {
		kind = trainer.ClusterTrainingRuntimeKind
	}
	job = trainer.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: rt.Namespace, Name: trainJobName(rt), Labels: map[string]string{LabelRuntimeTest: rt.Name}},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: rt.Spec.RuntimeRef.Name, Kind: ptr.To(kind), APIGroup: ptr.To(trainer.GroupVersion.Group)},
			// A smoke test must never outlive its RuntimeTest's verdict by much,
			// whatever happens to this controller.
			ActiveDeadlineSeconds: int64(timeout(rt).Seconds()) + 60,
			Trainer: &trainer.Trainer{
				NumNodes:       ptr.To(numNodes),
				NumProcPerNode: ptr.To(max(rt.Spec.SlotsPerWorker, 1)),
				Command:        launcherCommand(impl),
			},
		},
	}
	if rt.Spec.Image != "" {
		job.Spec.Trainer.Image = ptr.To(rt.Spec.Image)
	}
	if err := controllerutil.SetControllerReference(rt, &job, r.client.Scheme()); err != nil {
		return nil, err
	}
	if err := r.client.Create(ctx, &job); err != nil {
		return nil, err
	}
	rt.Status.TrainJobName = job.Name
	rt.Status.StartTime = ptr.To(metav1.NewTime(r.now()))
	setConditions(&rt.Status, []metav1.Condition{{Type: api.ConditionJobCreated, Status: metav1.ConditionTrue, Reason: api.ReasonCreated,
		Message: fmt.Sprintf("TrainJob %s created on runtime %s: 1 launcher + %s, %d Slots per worker", job.Name, rt.Spec.RuntimeRef.Name, count(int(workers(rt)), "Worker"), max(rt.Spec.SlotsPerWorker, 1))}}, rt.Generation)
	r.recorder.Eventf(rt, &job, corev1.EventTypeNormal, api.ReasonCreated, "SmokeTest", "created TrainJob %s", job.Name)
	return &job, nil
}

// observe reads the TrainJob's pods and hostfile.
func (r *Reconciler) observe(ctx context.Context, rt *api.RuntimeTest, job *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) (Observation, error) {
	if rt.Status.StartTime == nil {
		rt.Status.StartTime = ptr.To(job.CreationTimestamp)
	}
	if rt.Status.TrainJobName == "" {
		rt.Status.TrainJobName = job.Name
	}
	o := Observation{ExpectedWorkers: workers(rt), Namespace: rt.Namespace, Start: rt.Status.StartTime.Time, Now: r.now(), Timeout: timeout(rt)}
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(rt.Namespace), client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: job.Name}); err != nil {
		return o, err
	}
	for _, p := range pods.Items {
		switch p.Labels[jobsetv1alpha2.ReplicatedJobNameKey] {
		case trainerconstants.Launcher:
			o.Launcher = append(o.Launcher, p)
		case trainerconstants.Node:
			o.Workers = append(o.Workers, p)
		}
	}
	o.HostsExpected = workers(rt)
	if ptr.Deref(spec.MLPolicy.MPI.RunLauncherAsNode, false) {
		o.HostsExpected++
	}
	// The hostfile the Trainer rendered is the ground truth when it exists.
	// Read live: mpiguard's cache holds only policy ConfigMaps.
	var cm corev1.ConfigMap
	err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: rt.Namespace, Name: job.Name + trainerconstants.MPIHostfileConfigMapSuffix}, &cm)
	switch {
	case err == nil:
		if n := int32(len(diagnosis.DistinctLines(cm.Data[trainerconstants.MPIHostfileName]))); n > 0 {
			o.HostsExpected = n
		}
	case !apierrors.IsNotFound(err):
		return o, err
	}
	for _, c := range job.Status.Conditions {
		if c.Type == trainer.TrainJobFailed && c.Status == metav1.ConditionTrue {
			o.TrainJobFailed = c.DeepCopy()
		}
	}
	// While every pod exists and nothing failed, the pods tell everything.
	if missingPods(o) != "" || o.TrainJobFailed != nil {
		if err := r.observeJobs(ctx, rt.Namespace, job.Name, &o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// observeJobs reads the JobSet the Trainer made of the TrainJob, its Jobs,
// and the Warning events on them (diagnosis.ReadJobSet), live and from the
// test's namespace only: mpiguard caches neither Jobs nor events
// cluster-wide for the sake of a rare smoke test, and the poll
// (--runtime-test-poll) finds a new event soon enough.
func (r *Reconciler) observeJobs(ctx context.Context, ns, name string, o *Observation) error {
	s, err := diagnosis.ReadJobSet(ctx, r.apiReader, ns, name, true)
	if err != nil {
		return err
	}
	o.JobSetFailed, o.FailedJobs, o.Warnings = s.Failed, s.FailedJobs, s.Warnings
	return nil
}

// equalStatus lets a poll that changed nothing skip the write (and the watch
// event it would cause).
func equalStatus(a, b *api.RuntimeTestStatus) bool { return equality.Semantic.DeepEqual(a, b) }

// AddFlags binds the controller's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, "runtime-tests", o.Enabled, "Run RuntimeTest smoke tests (mpiguard.io RuntimeTest resources).")
	fs.DurationVar(&o.Poll, "runtime-test-poll", o.Poll, "How often a running RuntimeTest is re-checked for its timeout.")
}
