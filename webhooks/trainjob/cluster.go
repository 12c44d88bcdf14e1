package trainjob

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/policies/pipeline"
)

// RBAC (ClusterRole: the webhooks judge TrainJobs of every namespace, from the
// manager's cache, so each of these is listed and watched cluster-wide):
//
// The namespace's other TrainJobs (aggregate quota, pending jobs).
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch
// The runtime a TrainJob references, rendered into its pods.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=clustertrainingruntimes;trainingruntimes,verbs=get;list;watch
// Namespace labels and annotations (exemptions, parameters), the quota and
// limit ranges the job's pods will be charged against, and the pods of jobs
// that already run (only pods with a JobSet label are cached).
// +kubebuilder:rbac:groups="",resources=namespaces;resourcequotas;limitranges;pods,verbs=get;list;watch
// RuntimeClass overhead counts against the quota.
// +kubebuilder:rbac:groups=node.k8s.io,resources=runtimeclasses,verbs=get;list;watch

// cluster reads, from the manager's cache, the objects a TrainJob's decision depends on.
type cluster struct {
	reader client.Reader
	// live reads the apiserver directly. It answers what the cache does not
	// have yet: a runtime or namespace created a moment before the TrainJob
	// must not make the submit fail.
	live client.Reader
}

// get reads from the cache and, when the cache does not have the object, from the apiserver.
func (c cluster) get(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := c.reader.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) && c.live != nil {
		err = c.live.Get(ctx, key, obj)
	}
	return err
}

var _ pipeline.Cluster = cluster{}

// Runtime returns the (Cluster)TrainingRuntime job refers to, or an error
// that says which runtime is missing and how to fix it.
func (c cluster) Runtime(ctx context.Context, job *trainer.TrainJob) (client.Object, error) {
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
		return nil, &runtimeNotFoundError{kind: kind, name: ref.Name}
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %q: %w", kind, ref.Name, err)
	}
	// Get already returned a copy (the cache deep-copies); set the kind, which
	// the renderer and policies read and typed reads leave empty.
	obj.GetObjectKind().SetGroupVersionKind(trainer.GroupVersion.WithKind(kind))
	return obj, nil
}

// Namespace reads, from the cache, what namespace ns contributes to a
// decision. Nothing is reserved: the quota decisions of jobs that start pods
// read their namespace's reservations and quotas live (reserve.go).
func (c cluster) Namespace(ctx context.Context, ns string) (*pipeline.Namespace, error) {
	out := &pipeline.Namespace{Namespace: &corev1.Namespace{}}
	if err := c.get(ctx, client.ObjectKey{Name: ns}, out.Namespace); err != nil {
		return nil, fmt.Errorf("reading namespace %q: %w", ns, err)
	}
	var quotas corev1.ResourceQuotaList
	if err := c.reader.List(ctx, &quotas, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing ResourceQuotas of %q: %w", ns, err)
	}
	var limitRanges corev1.LimitRangeList
	if err := c.reader.List(ctx, &limitRanges, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing LimitRanges of %q: %w", ns, err)
	}
	var runtimeClasses nodev1.RuntimeClassList
	if err := c.reader.List(ctx, &runtimeClasses); err != nil {
		return nil, fmt.Errorf("listing RuntimeClasses: %w", err)
	}
	out.Quotas, out.LimitRanges, out.RuntimeClasses = quotas.Items, limitRanges.Items, runtimeClasses.Items
	return out, nil
}

// runtimeNotFoundError says which runtime a TrainJob refers to is missing, and
// how to fix it.
type runtimeNotFoundError struct{ kind, name string }

func (e *runtimeNotFoundError) Error() string {
	return fmt.Sprintf("spec.runtimeRef: %s %q not found, so mpiguard cannot tell what this TrainJob would create; create the runtime first or fix spec.runtimeRef.name", e.kind, e.name)
}
