package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/internal/render"
)

// The Trainer (v2.3, KEP-2599) copies a TrainJob's runtime into the ConfigMap
// <job>-runtime-snapshot on its first reconcile and builds every later JobSet
// of the job — a resume's included — from that copy, not from the runtime
// (pkg/runtime/core/snapshot.go; its reader is unexported, so its rules are
// restated here, with its messages).
const snapshotDataKey = "runtime"

// SnapshotName is the name of the ConfigMap that holds job's runtime snapshot.
func SnapshotName(job *trainer.TrainJob) string { return job.Name + render.SnapshotSuffix }

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
	kind, err := SnapshotKind(job)
	if err != nil {
		return nil, err
	}
	return CheckSnapshot(job, cm, ParseSnapshot(cm.Data, kind))
}

// ParsedSnapshot is a snapshot ConfigMap's data read as the runtime kind the
// job refers to: the same data always parses the same, whichever job it
// belongs to, so a reader may keep one per distinct data (audit does).
type ParsedSnapshot struct {
	// Runtime is the runtime the data holds (never modified; CheckSnapshot
	// returns a copy), nil when Reason is set.
	Runtime client.Object
	// Reason is why the Trainer cannot read the data.
	Reason string
}

// ParseSnapshot parses a snapshot ConfigMap's data as a runtime of kind
// (trainer.ClusterTrainingRuntimeKind or trainer.TrainingRuntimeKind). The
// runtime's UID and resourceVersion name the data: identical snapshots are
// one runtime version to the renderer's template cache, and any edit of a
// snapshot is a version of its own, never rendered from the original's
// cached template.
func ParseSnapshot(data map[string]string, kind string) ParsedSnapshot {
	yamlData, ok := data[snapshotDataKey]
	if !ok {
		return ParsedSnapshot{Reason: fmt.Sprintf("invalid runtime snapshot: snapshot ConfigMap missing %q data key", snapshotDataKey)}
	}
	// A snapshot is a ConfigMap of the job's namespace, which its tenants
	// may edit: screened as a request is before the typed decode
	// (render.ScreenQuantities), since a resume reads it.
	if js, err := yaml.YAMLToJSON([]byte(yamlData)); err == nil {
		if err := render.ScreenQuantities(js); err != nil {
			return ParsedSnapshot{Reason: fmt.Sprintf("invalid runtime snapshot: %v", err)}
		}
	}
	var rt client.Object = &trainer.ClusterTrainingRuntime{}
	if kind == trainer.TrainingRuntimeKind {
		rt = &trainer.TrainingRuntime{}
	}
	if err := yaml.Unmarshal([]byte(yamlData), rt); err != nil {
		return ParsedSnapshot{Reason: fmt.Sprintf("invalid runtime snapshot: unable to unmarshal the snapshot: %v", err)}
	}
	rt.SetUID(types.UID(SnapshotContent(data)))
	rt.SetResourceVersion("1")
	return ParsedSnapshot{Runtime: rt}
}

// SnapshotContent names a snapshot ConfigMap's data: the same name for the
// same data, whichever job it belongs to.
func SnapshotContent(data map[string]string) string {
	yamlData, ok := data[snapshotDataKey]
	if !ok {
		return "snapshot-without-data"
	}
	sum := sha256.Sum256([]byte(yamlData))
	return "snapshot-" + hex.EncodeToString(sum[:])
}

// CheckSnapshot applies the Trainer's checks of a snapshot (meta is the
// ConfigMap's metadata, p its parsed data) to job, and returns a copy of the
// runtime it holds or a *SnapshotError with the Trainer's reason, in the
// Trainer's order: the owner first.
func CheckSnapshot(job *trainer.TrainJob, meta metav1.Object, p ParsedSnapshot) (client.Object, error) {
	refuse := func(format string, args ...any) error {
		return &SnapshotError{Namespace: meta.GetNamespace(), Name: meta.GetName(), Reason: fmt.Sprintf(format, args...)}
	}
	if owner := metav1.GetControllerOfNoCopy(meta); owner == nil || owner.UID != job.UID {
		return nil, refuse("invalid runtime snapshot: a snapshot configmap exists but is owned by another object")
	}
	if p.Reason != "" {
		return nil, refuse("%s", p.Reason)
	}
	rt := p.Runtime.DeepCopyObject().(client.Object)
	ref := job.Spec.RuntimeRef
	gvk := rt.GetObjectKind().GroupVersionKind()
	if (ref.Kind != nil && gvk.Kind != *ref.Kind) || (ref.APIGroup != nil && gvk.Group != *ref.APIGroup) || rt.GetName() != ref.Name {
		return nil, refuse("invalid runtime snapshot: the snapshot refers to the wrong runtime: expecting a runtime with name, api group and kind of %q, %q, %q but found runtime with name, api group and kind of %q, %q, %q",
			ref.Name, ptr.Deref(ref.APIGroup, "<any>"), ptr.Deref(ref.Kind, "<any>"), rt.GetName(), gvk.Group, gvk.Kind)
	}
	rt.GetObjectKind().SetGroupVersionKind(trainer.GroupVersion.WithKind(gvk.Kind))
	return rt, nil
}

// SnapshotKind is the runtime kind job refers to, which its snapshot is read
// as.
func SnapshotKind(job *trainer.TrainJob) (string, error) {
	switch kind := ptr.Deref(job.Spec.RuntimeRef.Kind, trainer.ClusterTrainingRuntimeKind); kind {
	case trainer.ClusterTrainingRuntimeKind, trainer.TrainingRuntimeKind:
		return kind, nil
	default:
		return "", fmt.Errorf("spec.runtimeRef.kind: Unsupported value %q: mpiguard evaluates TrainJobs that refer to a ClusterTrainingRuntime or TrainingRuntime", kind)
	}
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
