package pipeline

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The Trainer (v2.3, KEP-2599) copies a TrainJob's runtime into the ConfigMap
// <job>-runtime-snapshot on its first reconcile and builds every later JobSet
// of the job — a resume's included — from that copy, not from the runtime
// (pkg/runtime/core/snapshot.go; its reader is unexported, so its rules are
// restated here, with its messages).
const (
	snapshotSuffix  = "-runtime-snapshot"
	snapshotDataKey = "runtime"
)

// SnapshotName is the name of the ConfigMap that holds job's runtime snapshot.
func SnapshotName(job *trainer.TrainJob) string { return job.Name + snapshotSuffix }

// Snapshot reads job's runtime snapshot with reader: nil, nil when the job
// has none (it has not been reconciled yet, or it is a create). The
// ConfigMap lives in the job's namespace, where mpiguard caches no
// ConfigMaps, so reader is the apiserver.
func Snapshot(ctx context.Context, reader client.Reader, job *trainer.TrainJob) (client.Object, error) {
	if job.UID == "" { // not stored by an apiserver: nothing can own a snapshot of it
		return nil, nil
	}
	cm := &corev1.ConfigMap{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: SnapshotName(job)}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the runtime snapshot ConfigMap %s/%s: %w", job.Namespace, SnapshotName(job), err)
	}
	return DecodeSnapshot(job, cm)
}

// DecodeSnapshot returns the runtime cm holds for job, or a *SnapshotError
// with the reason the Trainer would refuse it for.
func DecodeSnapshot(job *trainer.TrainJob, cm *corev1.ConfigMap) (client.Object, error) {
	refuse := func(format string, args ...any) error {
		return &SnapshotError{Namespace: cm.Namespace, Name: cm.Name, Reason: fmt.Sprintf(format, args...)}
	}
	if owner := metav1.GetControllerOf(cm); owner == nil || owner.UID != job.UID {
		return nil, refuse("invalid runtime snapshot: a snapshot configmap exists but is owned by another object")
	}
	data, ok := cm.Data[snapshotDataKey]
	if !ok {
		return nil, refuse("invalid runtime snapshot: snapshot ConfigMap missing %q data key", snapshotDataKey)
	}
	ref := job.Spec.RuntimeRef
	var rt client.Object
	switch kind := ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind); kind {
	case trainer.ClusterTrainingRuntimeKind:
		rt = &trainer.ClusterTrainingRuntime{}
	case trainer.TrainingRuntimeKind:
		rt = &trainer.TrainingRuntime{}
	default:
		return nil, fmt.Errorf("spec.runtimeRef.kind: Unsupported value %q: mpiguard evaluates TrainJobs that refer to a ClusterTrainingRuntime or TrainingRuntime", kind)
	}
	if err := yaml.Unmarshal([]byte(data), rt); err != nil {
		return nil, refuse("invalid runtime snapshot: unable to unmarshal the snapshot: %v", err)
	}
	gvk := rt.GetObjectKind().GroupVersionKind()
	if (ref.Kind != nil && gvk.Kind != *ref.Kind) || (ref.APIGroup != nil && gvk.Group != *ref.APIGroup) || rt.GetName() != ref.Name {
		return nil, refuse("invalid runtime snapshot: the snapshot refers to the wrong runtime: expecting a runtime with name, api group and kind of %q, %q, %q but found runtime with name, api group and kind of %q, %q, %q",
			ref.Name, ptr.Deref(ref.APIGroup, "<any>"), ptr.Deref(ref.Kind, "<any>"), rt.GetName(), gvk.Group, gvk.Kind)
	}
	// The copy keeps the runtime's own UID and resourceVersion from when it
	// was taken; the renderer caches merged templates by them. Each version
	// of the snapshot is its own runtime: a tenant's edit of the ConfigMap
	// must never be rendered from the cached original.
	rt.SetUID(cm.UID)
	rt.SetResourceVersion(cm.ResourceVersion)
	rt.GetObjectKind().SetGroupVersionKind(trainer.GroupVersion.WithKind(gvk.Kind))
	return rt, nil
}

// SnapshotError is a runtime snapshot the Trainer would refuse to build the
// job from: the job cannot run until it is fixed.
type SnapshotError struct {
	Namespace, Name string
	Reason          string
}

func (e *SnapshotError) Error() string {
	return fmt.Sprintf("spec.runtimeRef: the Trainer builds this TrainJob from its runtime snapshot, ConfigMap %s/%s, and would refuse it: %s; delete the ConfigMap so the Trainer takes a new snapshot of the runtime, or restore it",
		e.Namespace, e.Name, e.Reason)
}
