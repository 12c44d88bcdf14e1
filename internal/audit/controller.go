package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	reports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	quotav1alpha1 "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/capacity"
	"github.com/mpiguard/mpiguard/internal/pipeline"
)

// RBAC (ClusterRole: audit reads and reports on every namespace):
//
// The reports it writes (server-side apply: create and patch), reads back
// with a GET, uncached (the previous results: timestamps, what newly fails),
// and deletes when nothing in a namespace is judged any more. No list or
// watch: no informer of Reports is started.
// +kubebuilder:rbac:groups=openreports.io,resources=reports;clusterreports,verbs=get;create;patch;delete
// A Warning event on a TrainJob that newly violates a policy.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// What it judges, and what a judgement reads (the webhooks read the same).
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs;clustertrainingruntimes;trainingruntimes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces;resourcequotas;limitranges;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=node.k8s.io,resources=runtimeclasses,verbs=get;list;watch

// ControllerName names the controller in logs and metrics and as the
// reporter of its events.
const ControllerName = "audit"

// ClusterScope is the work item of the cluster-scoped runtimes; every other
// item is a namespace's name (which can never be this).
const ClusterScope = "(cluster)"

// ReasonPolicyViolation is the reason of the event on a TrainJob that newly
// violates a policy.
const ReasonPolicyViolation = "PolicyViolation"

// Options configures the audit controller.
type Options struct {
	// Enabled runs the controller.
	Enabled bool
	// Interval re-audits every namespace and the cluster-scoped runtimes
	// this long after their last audit, whatever changed.
	Interval time.Duration
	// Debounce is how long a namespace's changes must rest before it is
	// audited: the changes of a burst (submits, a job's pods, a quota's
	// status.used) collapse into one audit after it (schedule.go).
	Debounce time.Duration
	// MaxDelay bounds how long a change waits for its audit when the
	// namespace never rests for Debounce.
	MaxDelay time.Duration
	// Nodes are the cluster's nodes by shape, kept by an informer
	// (pipeline.WatchNodes); nil: they are listed per audit.
	Nodes *capacity.Index
	// PassResults lists every pass in the Reports too (ReportWriter).
	PassResults bool
	// SkipNamespaces are never audited: mpiguard's webhooks never govern
	// them (config/webhook's namespaceSelector: mpiguard's own namespace and
	// kube-system), so no policy applies there. The manager adds its own
	// namespace.
	SkipNamespaces []string
}

// DefaultOptions audits every 10 minutes, and a changed namespace once its
// changes rest for 2 s, at the latest 30 s after the first of them.
func DefaultOptions() Options {
	return Options{Enabled: true, Interval: 10 * time.Minute, Debounce: 2 * time.Second, MaxDelay: 30 * time.Second, SkipNamespaces: []string{"kube-system"}}
}

// ErrNoReportCRDs says the openreports.io CRDs are not installed: audit
// has nowhere to publish (config/default installs them).
var ErrNoReportCRDs = errors.New("the openreports.io Report and ClusterReport CRDs are not installed (config/crd/openreports); audit is off")

// Controller audits on the elected leader: each namespace when something its
// results depend on changes, every namespace and the cluster-scoped
// runtimes when the policies change, and each on an interval.
type Controller struct {
	auditor  *Auditor
	writer   ReportWriter
	reader   client.Reader
	recorder events.EventRecorder
	opts     Options
	skip     map[string]bool
	now      func() time.Time

	// policies is signalled by PolicyLoaded; version is the policy set
	// version the last full audit was started for.
	policies chan struct{}
	mu       sync.Mutex
	version  string
	// changes are the unaudited changes per work item (schedule.go).
	changes map[string]*pending
}

// SetupWithManager registers the audit controller. p is the admission
// pipeline (its engine serves today's policies); res reads the quota
// reservations. It returns ErrNoReportCRDs when the Report CRDs are missing.
func SetupWithManager(mgr ctrl.Manager, p *pipeline.Pipeline, res ReservationReader, opts Options) (*Controller, error) {
	if _, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: reports.GroupName, Kind: "Report"}, reports.GroupVersion.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, ErrNoReportCRDs
		}
		return nil, fmt.Errorf("looking up the Report API: %w", err)
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultOptions().Interval
	}
	if opts.MaxDelay < opts.Debounce {
		opts.MaxDelay = opts.Debounce
	}
	c := &Controller{
		auditor: &Auditor{
			Pipeline:     p,
			Cluster:      pipeline.ClientCluster{Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), NodeIndex: opts.Nodes},
			Reservations: res,
			snapshots:    newSnapshotReads(mgr.GetAPIReader(), opts.Interval),
		},
		writer:   ReportWriter{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), PassResults: opts.PassResults},
		reader:   mgr.GetClient(),
		recorder: mgr.GetEventRecorder(ControllerName),
		opts:     opts,
		skip:     map[string]bool{},
		now:      time.Now,
		policies: make(chan struct{}, 1),
		version:  p.Engine().Version(),
		changes:  map[string]*pending{},
	}
	for _, ns := range opts.SkipNamespaces {
		c.skip[ns] = true
	}
	own := inNamespace(c.debounced)
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// Leader only (the default for controllers): one writer of reports.
		// Two namespaces at a time, on the machines mpiguard runs on.
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, NeedLeaderElection: ptr.To(true)}).
		// A namespace's labels and annotations select exemptions and
		// parameters; its creation starts its audits, its deletion ends them.
		Watches(&corev1.Namespace{}, c.debounced(func(_ context.Context, o client.Object) []string { return []string{o.GetName()} }),
			builder.WithPredicates(metadataChanged())).
		Watches(&trainer.TrainJob{}, own, builder.WithPredicates(jobChanged())).
		// Pods appearing or going move a job between waiting and running.
		Watches(&corev1.Pod{}, own, builder.WithPredicates(createdOrDeleted())).
		Watches(&corev1.ResourceQuota{}, own).
		Watches(&corev1.LimitRange{}, own).
		Watches(&trainer.TrainingRuntime{}, own).
		Watches(&trainer.ClusterTrainingRuntime{}, c.debounced(c.clusterRuntimeChanged)).
		// A RuntimeClass's overhead is charged to every pod that names it:
		// a job waiting for pods may no longer fit its quotas.
		Watches(&nodev1.RuntimeClass{}, c.debounced(c.namespacesWithJobs)).
		// A QuotaReservation is named after the namespace it holds quota in.
		Watches(&quotav1alpha1.QuotaReservation{}, c.debounced(func(_ context.Context, o client.Object) []string { return []string{o.GetName()} })).
		WatchesRawSource(source.Func(c.start))
	return c, watchVolcanoQueues(mgr, b, c).Complete(c)
}

// PolicyLoaded tells the controller the policy set was (re)loaded
// (internal/reload calls it on every replica): the leader re-audits
// everything when the version changed. It never blocks.
func (c *Controller) PolicyLoaded() {
	select {
	case c.policies <- struct{}{}:
	default: // one signal pending is enough
	}
}

// start queues the cluster-scoped runtimes (namespaces come with the
// namespace informer's first list) and, for as long as the controller runs,
// everything whenever the policy set version changes.
func (c *Controller) start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	q.Add(item(ClusterScope))
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.policies:
				c.policySetChanged(ctx, q)
			}
		}
	}()
	return nil
}

func (c *Controller) policySetChanged(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	v := c.auditor.Pipeline.Engine().Version()
	c.mu.Lock()
	changed := v != c.version
	c.version = v
	c.mu.Unlock()
	if !changed {
		return
	}
	log := ctrl.LoggerFrom(ctx).WithName(ControllerName)
	var nss corev1.NamespaceList
	if err := c.reader.List(ctx, &nss); err != nil {
		// The interval audits them all in time.
		log.Error(err, "listing namespaces to audit after a policy change")
		return
	}
	log.Info("policy set changed: auditing everything", "version", v, "namespaces", len(nss.Items))
	q.Add(item(ClusterScope))
	for i := range nss.Items {
		q.Add(item(nss.Items[i].Name))
	}
}

// Reconcile audits one namespace (or the cluster-scoped runtimes) and
// publishes the results.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if wait := c.take(req.Name); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if req.Name == ClusterScope {
		return c.auditCluster(ctx)
	}
	ns := req.Name
	if c.skip[ns] {
		return reconcile.Result{}, nil
	}
	return c.auditNamespace(ctx, ns)
}

func (c *Controller) auditNamespace(ctx context.Context, ns string) (reconcile.Result, error) {
	var nsObj corev1.Namespace
	if err := c.reader.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); err != nil || !nsObj.DeletionTimestamp.IsZero() {
		if err == nil || apierrors.IsNotFound(err) {
			// Gone or going: its Report goes with it; nothing may be
			// written into it any more.
			forget(ns)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	start := c.now()
	rs, err := c.auditor.Namespace(ctx, ns)
	if err == nil {
		err = c.publish(ctx, &nsObj, rs)
	}
	observe(ns, rs, c.now().Sub(start), err, c.now())
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		forget(ns)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("auditing namespace %s: %w", ns, err)
	}
	return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
}

// publish writes the namespace's Report and, once written, an event on each
// TrainJob that newly violates a policy: a failed write is retried, and its
// events must not be sent twice.
func (c *Controller) publish(ctx context.Context, ns *corev1.Namespace, rs []Result) error {
	previous, err := c.writer.PreviousReport(ctx, ns.Name)
	if err != nil {
		return err
	}
	if err := c.writer.WriteNamespace(ctx, ns, rs, previous); err != nil {
		return fmt.Errorf("writing Report %s/%s: %w", ns.Name, ReportName, err)
	}
	before := Previous(previous)
	for _, r := range rs {
		if r.Object.Kind != trainer.TrainJobKind || !Newly(r, before) {
			continue
		}
		job := &trainer.TrainJob{}
		job.APIVersion, job.Kind = r.Object.APIVersion, r.Object.Kind
		job.Namespace, job.Name, job.UID = r.Object.Namespace, r.Object.Name, r.Object.UID
		note := fmt.Sprintf("violates mpiguard policy %s (policy set %s), so it would be refused if submitted now: %s", r.Policy, r.PolicySetVersion, r.Message)
		c.recorder.Eventf(job, nil, corev1.EventTypeWarning, ReasonPolicyViolation, "Audit", "%s", pipeline.EventNote(note, "in the namespace's Report "+ReportName))
	}
	return nil
}

func (c *Controller) auditCluster(ctx context.Context) (reconcile.Result, error) {
	start := c.now()
	rs, err := c.auditor.ClusterRuntimes(ctx)
	if err == nil {
		var previous []reports.ReportResult
		if previous, err = c.writer.PreviousReport(ctx, ""); err == nil {
			err = c.writer.WriteCluster(ctx, rs, previous)
		}
	}
	observe("", rs, c.now().Sub(start), err, c.now())
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("auditing the ClusterTrainingRuntimes: %w", err)
	}
	return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
}

// clusterRuntimeChanged: the ClusterReport, and every namespace with a
// TrainJob that uses the runtime.
func (c *Controller) clusterRuntimeChanged(ctx context.Context, o client.Object) []string {
	out := []string{ClusterScope}
	var jobs trainer.TrainJobList
	if err := c.reader.List(ctx, &jobs); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing TrainJobs to audit after a ClusterTrainingRuntime change; the interval audits them")
		return out
	}
	seen := map[string]bool{}
	for i := range jobs.Items {
		ref := jobs.Items[i].Spec.RuntimeRef
		if ref.Name == o.GetName() && ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind) == trainer.ClusterTrainingRuntimeKind && !seen[jobs.Items[i].Namespace] {
			seen[jobs.Items[i].Namespace] = true
			out = append(out, jobs.Items[i].Namespace)
		}
	}
	return out
}

// namespacesWithJobs: every namespace with a TrainJob (a RuntimeClass may be
// named by any pod template, so any job may be charged differently now).
func (c *Controller) namespacesWithJobs(ctx context.Context, _ client.Object) []string {
	var jobs trainer.TrainJobList
	if err := c.reader.List(ctx, &jobs); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing TrainJobs to audit after a RuntimeClass change; the interval audits them")
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for i := range jobs.Items {
		if ns := jobs.Items[i].Namespace; !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	return out
}

func item(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}
}

// debounced notes a change of the work items keys names for an object's
// events and queues them after Options.Debounce: the events of a burst land
// on one queued item, which waits for them to rest (take).
func (c *Controller) debounced(keys func(context.Context, client.Object) []string) handler.EventHandler {
	add := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, k := range keys(ctx, o) {
			if c.skip[k] {
				continue // never audited: kube-system's pod churn queues nothing
			}
			c.changed(k)
			q.AddAfter(item(k), c.opts.Debounce)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
	}
}

// changed notes a change of work item name now.
func (c *Controller) changed(name string) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.changes[name]; p != nil {
		p.last = now
		return
	}
	c.changes[name] = &pending{first: now, last: now}
}

// take says how long the audit of work item name must still wait for its
// changes to rest (schedule.go); when it may run now, the changes are taken:
// those noted from here on are audited again after it.
func (c *Controller) take(name string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	wait := auditDelay(c.now(), c.changes[name], c.opts)
	if wait == 0 {
		delete(c.changes, name)
	}
	return wait
}

// inNamespace queues an object's namespace.
func inNamespace(debounced func(func(context.Context, client.Object) []string) handler.EventHandler) handler.EventHandler {
	return debounced(func(_ context.Context, o client.Object) []string { return []string{o.GetNamespace()} })
}

// metadataChanged: a namespace's labels or annotations, its creation and
// deletion.
func metadataChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
			!equality.Semantic.DeepEqual(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()) ||
			e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}

// jobChanged: what a TrainJob's judgement depends on (its spec and
// metadata), its finishing and its start; not every status update the
// Trainer makes.
func jobChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*trainer.TrainJob)
		job, okNew := e.ObjectNew.(*trainer.TrainJob)
		if !okOld || !okNew {
			return true
		}
		return old.Generation != job.Generation ||
			!equality.Semantic.DeepEqual(old.Labels, job.Labels) ||
			!equality.Semantic.DeepEqual(old.Annotations, job.Annotations) ||
			old.DeletionTimestamp.IsZero() != job.DeletionTimestamp.IsZero() ||
			!equality.Semantic.DeepEqual(old.Status.Conditions, job.Status.Conditions) ||
			Running(old, nil) != Running(job, nil)
	}}
}

// createdOrDeleted: pods that appear or go, not their status updates.
func createdOrDeleted() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}
}
