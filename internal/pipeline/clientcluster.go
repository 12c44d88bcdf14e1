package pipeline

import (
	"context"
	"errors"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/capacity"
)

// ClientCluster is the Cluster a running cluster is, read with
// controller-runtime clients: the webhooks read the manager's cache, the
// command line a plain client. Nothing is reserved: the quota decisions of
// jobs that start pods read their namespace's reservations and quotas live
// (internal/reservations/transaction.go).
type ClientCluster struct {
	// Reader reads the objects a decision depends on.
	Reader client.Reader
	// Live, when set, reads the apiserver directly what Reader does not
	// have: a runtime or namespace created a moment before the TrainJob is
	// not in the cache yet, and must not make the submit fail.
	Live client.Reader
	// NodeIndex, when set, is the cluster's nodes by shape, kept by an
	// informer (capacity.Index); Nodes reads it instead of listing Nodes.
	NodeIndex *capacity.Index
}

var _ Cluster = ClientCluster{}

// get reads from Reader and, when it does not have the object, from Live.
func (c ClientCluster) get(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := c.Reader.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) && c.Live != nil {
		err = c.Live.Get(ctx, key, obj)
	}
	return err
}

// Runtime returns the (Cluster)TrainingRuntime job refers to, or an error
// that says which runtime is missing and how to fix it (a
// *RuntimeNotFoundError when it does not exist).
func (c ClientCluster) Runtime(ctx context.Context, job *trainer.TrainJob) (client.Object, error) {
	ref := job.Spec.RuntimeRef
	kind := ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind)
	var (
		obj client.Object
		key client.ObjectKey
	)
	switch kind {
	case trainer.ClusterTrainingRuntimeKind:
		obj, key = &trainer.ClusterTrainingRuntime{}, client.ObjectKey{Name: ref.Name}
	case trainer.TrainingRuntimeKind:
		obj, key = &trainer.TrainingRuntime{}, client.ObjectKey{Namespace: job.Namespace, Name: ref.Name}
	default:
		return nil, fmt.Errorf("spec.runtimeRef.kind: Unsupported value %q: mpiguard evaluates TrainJobs that refer to a ClusterTrainingRuntime or TrainingRuntime", kind)
	}
	err := c.get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return nil, &RuntimeNotFoundError{Kind: kind, Name: ref.Name}
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %q: %w", kind, ref.Name, err)
	}
	// Get returned a copy (the cache deep-copies); set the kind, which the
	// renderer and policies read and typed reads leave empty.
	obj.GetObjectKind().SetGroupVersionKind(trainer.GroupVersion.WithKind(kind))
	return obj, nil
}

// Snapshot reads job's runtime snapshot from the apiserver (Live when set):
// mpiguard's cache holds no ConfigMaps of job namespaces.
func (c ClientCluster) Snapshot(ctx context.Context, job *trainer.TrainJob) (client.Object, error) {
	reader := c.Reader
	if c.Live != nil {
		reader = c.Live
	}
	return Snapshot(ctx, reader, job)
}

// JobSet reads the JobSet the Trainer built for job from the apiserver (Live
// when set; mpiguard caches no JobSets), nil when there is none or the one of
// that name is not the job's.
func (c ClientCluster) JobSet(ctx context.Context, job *trainer.TrainJob) (*jobsetv1alpha2.JobSet, error) {
	reader := c.Reader
	if c.Live != nil {
		reader = c.Live
	}
	js := &jobsetv1alpha2.JobSet{}
	err := reader.Get(ctx, client.ObjectKeyFromObject(job), js)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading JobSet %s/%s: %w", job.Namespace, job.Name, err)
	}
	if owner := metav1.GetControllerOf(js); owner == nil || owner.UID != job.UID {
		return nil, nil
	}
	return js, nil
}

// ObjectExists reads the metadata of the object from the apiserver (Live
// when set: mpiguard caches none of the kinds jobs create). A kind the
// apiserver does not serve (a PodGroup CRD not installed) has no objects.
func (c ClientCluster) ObjectExists(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (bool, error) {
	reader := c.Reader
	if c.Live != nil {
		reader = c.Live
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	err := reader.Get(ctx, key, m)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return false, nil
	}
	return false, err
}

// Namespace reads what namespace ns contributes to a decision.
func (c ClientCluster) Namespace(ctx context.Context, ns string) (*Namespace, error) {
	out := &Namespace{Namespace: &corev1.Namespace{}}
	if err := c.get(ctx, client.ObjectKey{Name: ns}, out.Namespace); err != nil {
		return nil, fmt.Errorf("reading namespace %q: %w", ns, err)
	}
	var quotas corev1.ResourceQuotaList
	if err := c.Reader.List(ctx, &quotas, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing ResourceQuotas of %q: %w", ns, err)
	}
	var limitRanges corev1.LimitRangeList
	if err := c.Reader.List(ctx, &limitRanges, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing LimitRanges of %q: %w", ns, err)
	}
	var runtimeClasses nodev1.RuntimeClassList
	if err := c.Reader.List(ctx, &runtimeClasses); err != nil {
		return nil, fmt.Errorf("listing RuntimeClasses: %w", err)
	}
	var priorityClasses schedulingv1.PriorityClassList
	if err := c.Reader.List(ctx, &priorityClasses); err != nil {
		return nil, fmt.Errorf("listing PriorityClasses: %w", err)
	}
	out.Quotas, out.LimitRanges, out.RuntimeClasses, out.PriorityClasses = quotas.Items, limitRanges.Items, runtimeClasses.Items, priorityClasses.Items
	// ServiceAccounts by their metadata only: a decision needs their names,
	// and a metadata informer keeps no secrets or image pull secrets. None
	// listed leaves them not known (a user's `mpiguard check --from-cluster`
	// reads through audit.SkipForbidden).
	accounts := &metav1.PartialObjectMetadataList{}
	accounts.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccountList"))
	if err := c.Reader.List(ctx, accounts, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing ServiceAccounts of %q: %w", ns, err)
	}
	for i := range accounts.Items {
		out.ServiceAccounts = append(out.ServiceAccounts, corev1.ServiceAccount{ObjectMeta: accounts.Items[i].ObjectMeta})
	}
	return out, nil
}

// RuntimeNotFoundError says which runtime a TrainJob refers to is missing,
// and how to fix it.
type RuntimeNotFoundError struct{ Kind, Name string }

func (e *RuntimeNotFoundError) Error() string {
	return fmt.Sprintf("spec.runtimeRef: %s %q not found, so mpiguard cannot tell what this TrainJob would create; create the runtime first or fix spec.runtimeRef.name", e.Kind, e.Name)
}

// IsRuntimeGone says whether err says a job's runtime does not exist: such a
// job creates no pods.
func IsRuntimeGone(err error) bool {
	var gone *RuntimeNotFoundError
	return apierrors.IsNotFound(err) || errors.As(err, &gone)
}
