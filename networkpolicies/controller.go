package networkpolicies

import (
	"context"
	"fmt"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerName names the controller in logs, metrics and as event reporter.
const ControllerName = "mpiguard-networkpolicies"

// runtimeRefIndex indexes TrainJobs by runtimeKey, so a runtime change finds the
// jobs that use it through the cache instead of listing every TrainJob.
const runtimeRefIndex = "mpiguard.io/networkpolicies.runtimeRef"

// RBAC (ClusterRole: TrainJobs, and so their NetworkPolicies, live in every
// namespace; docs/operations.md "Permissions"):
//
// Watches every MPI TrainJob, the owner of the policy it keeps.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch
// The policy's owner reference blocks the TrainJob's deletion until the garbage
// collector removed the policy (blockOwnerDeletion needs update on the owner's finalizers).
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/finalizers,verbs=update
// The job's runtime says whether it is MPI and which ports its template opens.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=clustertrainingruntimes;trainingruntimes,verbs=get;list;watch
// Server-side apply (patch; create when absent), repair of a deleted or edited
// policy (watch), removal when a namespace opts out (delete). No update: every
// write is an apply.
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// The mpiguard.io/network-policy annotation of the job's namespace switches it off.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// Events on the TrainJob (policy created, repaired, deleted), in its namespace.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler keeps the NetworkPolicy of one TrainJob in line with its template.
type Reconciler struct {
	client client.Client
	// apiReader reads past the cache; used only to confirm suspected drift, so a
	// cache that lags our own write is not mistaken for someone else's edit.
	apiReader client.Reader
	recorder  events.EventRecorder
	opts      Options
	applied   *appliedRecords
}

// SetupWithManager registers the NetworkPolicy controller with mgr unless
// opts.Enabled is false. The manager's scheme must hold the Trainer v1alpha1,
// core and networking/v1 types.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if !opts.Enabled {
		return nil
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return err
	}
	for _, obj := range []client.Object{&trainer.TrainJob{}, &trainer.ClusterTrainingRuntime{}, &networkingv1.NetworkPolicy{}, &corev1.Namespace{}} {
		if _, err := mgr.GetClient().GroupVersionKindFor(obj); err != nil {
			return fmt.Errorf("networkpolicies: the manager's scheme lacks %T; register it before setup: %w", obj, err)
		}
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &trainer.TrainJob{}, runtimeRefIndex,
		func(o client.Object) []string {
			if key := runtimeKey(o.(*trainer.TrainJob)); key != "" {
				return []string{key}
			}
			return nil
		}); err != nil {
		return fmt.Errorf("networkpolicies: indexing TrainJobs by runtimeRef: %w", err)
	}

	r := &Reconciler{
		client:    mgr.GetClient(),
		apiReader: mgr.GetAPIReader(),
		recorder:  mgr.GetEventRecorder(ControllerName),
		opts:      opts,
		applied:   newAppliedRecords(),
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("networkpolicies").
		// Spec changes only: the Trainer updates TrainJob status often, and status
		// never changes the policy.
		For(&trainer.TrainJob{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Every event on a policy we control (deletion, any edit) re-queues its job:
		// this is what makes drift repair happen every time, not only once.
		Owns(&networkingv1.NetworkPolicy{}).
		// A policy that is not ours but has a job's name blocks that job (conflict);
		// its deletion or hand-over must re-queue the job, and Owns() cannot see it.
		Watches(&networkingv1.NetworkPolicy{}, handler.EnqueueRequestsFromMapFunc(jobOfSameName),
			builder.WithPredicates(notControlledByTrainJob())).
		Watches(&trainer.ClusterTrainingRuntime{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfClusterRuntime),
			builder.WithPredicates(runtimeChanged())).
		Watches(&trainer.TrainingRuntime{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfRuntime),
			builder.WithPredicates(runtimeChanged())).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.jobsInNamespace),
			builder.WithPredicates(namespaceAnnotationsChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}

func (r *Reconciler) jobsOfClusterRuntime(ctx context.Context, o client.Object) []reconcile.Request {
	return r.jobRequests(ctx, client.MatchingFields{runtimeRefIndex: clusterRuntimeKey(o.GetName())})
}

func (r *Reconciler) jobsOfRuntime(ctx context.Context, o client.Object) []reconcile.Request {
	return r.jobRequests(ctx, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{runtimeRefIndex: namespacedRuntimeKey(o.GetNamespace(), o.GetName())})
}

func (r *Reconciler) jobsInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.jobRequests(ctx, client.InNamespace(o.GetName()))
}

func (r *Reconciler) jobRequests(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var jobs trainer.TrainJobList
	if err := r.client.List(ctx, &jobs, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing TrainJobs to re-evaluate their NetworkPolicies")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(jobs.Items))
	for i := range jobs.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&jobs.Items[i])})
	}
	return reqs
}

// jobOfSameName maps a NetworkPolicy to the TrainJob it would belong to: the
// policy of a job is named after it. A request for a job that does not exist
// costs one cache miss.
func jobOfSameName(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
}

func notControlledByTrainJob() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		ref := metav1.GetControllerOf(o)
		return ref == nil || ref.Kind != trainer.TrainJobKind
	})
}

// runtimeChanged passes runtime events that can change a job's policy: creation
// and deletion (a job waiting for its runtime), a spec change (mlPolicy.mpi added
// or removed) or a change of one of our annotations.
func runtimeChanged() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, annotationsChanged())
}

// namespaceAnnotationsChanged passes a Namespace only when our annotations differ:
// Namespace status and label churn must not re-render every job in it. Creation
// passes only for an annotated namespace (the initial list at start-up).
func namespaceAnnotationsChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return hasOurAnnotations(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return ourAnnotationsDiffer(e.ObjectOld, e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func annotationsChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		UpdateFunc:  func(e event.UpdateEvent) bool { return ourAnnotationsDiffer(e.ObjectOld, e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func hasOurAnnotations(o client.Object) bool {
	a := o.GetAnnotations()
	return slices.ContainsFunc(ourAnnotations, func(k string) bool { _, ok := a[k]; return ok })
}

func ourAnnotationsDiffer(oldObj, newObj client.Object) bool {
	o, n := oldObj.GetAnnotations(), newObj.GetAnnotations()
	return slices.ContainsFunc(ourAnnotations, func(k string) bool {
		ov, ook := o[k]
		nv, nok := n[k]
		return ook != nok || ov != nv
	})
}
