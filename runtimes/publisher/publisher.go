// Package publisher keeps mpiguard's curated ClusterTrainingRuntimes published:
// it applies them with server-side apply under one field owner when the manager
// starts and puts them back whenever someone deletes or edits one.
package publisher

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// FieldOwner is the single field manager the publisher writes with.
const FieldOwner = "mpiguard-runtime-publisher"

// conflictRetry is how soon a write that lost an optimistic-concurrency race is retried.
const conflictRetry = 200 * time.Millisecond

// Event reasons.
const (
	ReasonPublished     = "Published"
	ReasonRestored      = "Restored"
	ReasonPublishFailed = "PublishFailed"
)

// RBAC (ClusterRole: ClusterTrainingRuntimes are cluster-scoped):
//
// Publishes the curated runtimes by server-side apply (patch; create when
// absent), puts back an edited spec (update) and watches for deletion or edits.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=clustertrainingruntimes,verbs=get;list;watch;create;update;patch
// Events on the runtimes (cluster-scoped objects: they land in "default").
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler publishes one curated runtime per request (keyed by name).
type Reconciler struct {
	client   client.Client
	recorder events.EventRecorder
	desired  map[string]*trainer.ClusterTrainingRuntime

	// written remembers, per runtime, the generation the apiserver gave our last
	// write. A live generation that differs means someone else changed the spec:
	// server-side apply alone would not remove fields they added, so the spec is
	// then replaced whole. Lost on restart, which costs one no-op update per runtime.
	mu      sync.Mutex
	written map[string]writeMark
}

// writeMark identifies the object version our last write produced.
type writeMark struct {
	uid        types.UID
	generation int64
}

// SetupWithManager registers the publisher when opts.Enabled.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if !opts.Enabled {
		return nil
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	all, err := catalog.LoadFor(opts.platform())
	if err != nil {
		return fmt.Errorf("loading curated runtimes: %w", err)
	}
	r := &Reconciler{
		client:   mgr.GetClient(),
		recorder: mgr.GetEventRecorder("mpiguard-runtime-publisher"),
		desired:  map[string]*trainer.ClusterTrainingRuntime{},
		written:  map[string]writeMark{},
	}
	for _, rt := range all {
		if opts.Selects(rt.Name) {
			r.desired[rt.Name] = rt
		}
	}
	if len(r.desired) == 0 {
		return fmt.Errorf("runtime publisher: include %v / exclude %v select none of the curated runtimes %v", opts.Include, opts.Exclude, catalog.Names(all))
	}
	initSeries(slices.Collect(maps.Keys(r.desired)))
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool { _, ok := r.desired[o.GetName()]; return ok })
	return ctrl.NewControllerManagedBy(mgr).
		Named("runtime-publisher").
		For(&trainer.ClusterTrainingRuntime{}, builder.WithPredicates(ours)).
		// Publish everything once at start, even runtimes that do not exist yet
		// (a watch only reports objects that exist).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			for name := range r.desired {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
			}
			return nil
		})).
		Complete(r)
}

// Reconcile makes the named curated runtime match the binary's copy.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	want, ok := r.desired[req.Name]
	if !ok {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("clusterTrainingRuntime", req.Name)

	var live trainer.ClusterTrainingRuntime
	err := r.client.Get(ctx, req.NamespacedName, &live)
	switch {
	case apierrors.IsNotFound(err):
		return r.apply(ctx, want, "", "deleted")
	case err != nil:
		return ctrl.Result{}, err
	case live.DeletionTimestamp != nil:
		// The Trainer holds a finalizer while TrainJobs use the runtime; it comes
		// back as soon as the deletion completes.
		log.V(1).Info("curated runtime is being deleted; will publish it again once it is gone")
		publishedGauge.WithLabelValues(req.Name).Set(0)
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}

	r.mu.Lock()
	mark, seen := r.written[req.Name]
	r.mu.Unlock()
	sameObject := seen && mark.uid == live.UID
	if sameObject && live.Generation < mark.generation {
		// The cache has not caught up with our own last write yet.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if !sameObject || live.Generation > mark.generation {
		updated, err := r.replaceSpec(ctx, &live, want)
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		if err != nil {
			return r.failed(want, err)
		}
		if seen {
			// The update is the repair: count it now. The apply that follows can still
			// lose a race to the next edit, which is then repaired (and counted) on
			// its own. Remembering the update's generation keeps a conflict caused by
			// a metadata-only write (no new generation) from counting twice.
			r.remember(want.Name, writeMark{uid: updated.UID, generation: updated.Generation})
			r.repaired(updated, "edited")
		}
		return r.apply(ctx, want, updated.ResourceVersion, "")
	}
	return r.apply(ctx, want, live.ResourceVersion, "")
}

// remember records the object version a write of ours produced and returns the
// one recorded before, if any.
func (r *Reconciler) remember(name string, mark writeMark) (prev writeMark, seen bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, seen = r.written[name]
	r.written[name] = mark
	return prev, seen
}

// repaired counts and reports the restoration of a curated runtime someone else
// changed (cause "edited") or deleted.
func (r *Reconciler) repaired(rt *trainer.ClusterTrainingRuntime, cause string) {
	repairsTotal.WithLabelValues(rt.Name, cause).Inc()
	r.recorder.Eventf(rt, nil, corev1.EventTypeWarning, ReasonRestored, "Restore",
		"curated runtime %s was %s outside mpiguard and has been restored; change curated runtimes through mpiguard's release, or copy one under a new name", rt.Name, cause)
}

// replaceSpec overwrites the whole spec with an update, removing fields another
// field manager added; server-side apply then takes back ownership of the rest.
func (r *Reconciler) replaceSpec(ctx context.Context, live, want *trainer.ClusterTrainingRuntime) (*trainer.ClusterTrainingRuntime, error) {
	updated := live.DeepCopy()
	updated.Spec = *want.Spec.DeepCopy()
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	maps.Copy(updated.Labels, want.Labels)
	if updated.Annotations == nil && len(want.Annotations) > 0 {
		updated.Annotations = map[string]string{}
	}
	maps.Copy(updated.Annotations, want.Annotations)
	return updated, r.client.Update(ctx, updated, client.FieldOwner(FieldOwner))
}

// apply server-side-applies want; cause is "deleted" when this write repairs
// someone else's deletion, "" otherwise (an edit is repaired by replaceSpec).
// resourceVersion, when set, makes the apply conditional on the object we last
// saw: a foreign write that lands in between fails the apply with a conflict (and
// a retry) instead of being recorded as ours.
func (r *Reconciler) apply(ctx context.Context, want *trainer.ClusterTrainingRuntime, resourceVersion, cause string) (ctrl.Result, error) {
	u, err := toUnstructured(want)
	if err != nil {
		return r.failed(want, err)
	}
	u.SetResourceVersion(resourceVersion)
	// The apply response (written back into u) carries the generation we produced;
	// the cache may not have it yet.
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		if apierrors.IsConflict(err) {
			// Someone wrote since we looked (or the cache lags): look again.
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return r.failed(want, err)
	}
	var live trainer.ClusterTrainingRuntime
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &live); err != nil {
		return ctrl.Result{}, err
	}
	now := writeMark{uid: live.UID, generation: live.Generation}
	prev, seen := r.remember(want.Name, now)

	appliesTotal.WithLabelValues(want.Name, "success").Inc()
	publishedGauge.WithLabelValues(want.Name).Set(1)
	switch {
	case cause != "" && seen:
		r.repaired(&live, cause)
	case !seen || prev != now:
		r.recorder.Eventf(&live, nil, corev1.EventTypeNormal, ReasonPublished, "Publish",
			"curated runtime %s published (generation %d)", want.Name, live.Generation)
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) failed(want *trainer.ClusterTrainingRuntime, err error) (ctrl.Result, error) {
	appliesTotal.WithLabelValues(want.Name, "error").Inc()
	publishedGauge.WithLabelValues(want.Name).Set(0)
	r.recorder.Eventf(want, nil, corev1.EventTypeWarning, ReasonPublishFailed, "Publish",
		"publishing curated runtime %s failed: %v", want.Name, err)
	return ctrl.Result{}, fmt.Errorf("publishing curated runtime %s: %w", want.Name, err)
}

// toUnstructured turns the typed runtime into the body of an apply request
// holding the fields the YAML sets (no status, no zero timestamp), so the
// publisher owns those fields and nothing else.
func toUnstructured(rt *trainer.ClusterTrainingRuntime) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rt)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(trainer.GroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind))
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}
