package networkpolicies

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// runtimeInfo is what the controller needs to know about a TrainJob's runtime.
type runtimeInfo struct {
	// found is false when the referenced runtime does not exist (yet).
	found bool
	// mpi is true when the runtime has mlPolicy.mpi.
	mpi bool
	// source carries the runtime's annotations for resolveSettings.
	source annotated
}

// runtimeKey identifies a runtime a TrainJob points at; it is also the value of
// the TrainJob field index, so a runtime change finds its jobs without a scan.
// Empty when the reference is not to a Trainer runtime.
func runtimeKey(job *trainer.TrainJob) string {
	ref := job.Spec.RuntimeRef
	if ref.APIGroup != nil && *ref.APIGroup != trainer.GroupVersion.Group {
		return ""
	}
	kind := trainer.ClusterTrainingRuntimeKind
	if ref.Kind != nil && *ref.Kind != "" {
		kind = *ref.Kind
	}
	switch kind {
	case trainer.ClusterTrainingRuntimeKind:
		return clusterRuntimeKey(ref.Name)
	case trainer.TrainingRuntimeKind:
		return namespacedRuntimeKey(job.Namespace, ref.Name)
	}
	return ""
}

func clusterRuntimeKey(name string) string { return trainer.ClusterTrainingRuntimeKind + "/" + name }

func namespacedRuntimeKey(namespace, name string) string {
	return trainer.TrainingRuntimeKind + "/" + namespace + "/" + name
}

// lookupRuntime reads the job's runtime through c (the manager's cache). A
// reference to something that is not a Trainer runtime is "found, not MPI": the
// Trainer would not run it as MPI either.
func lookupRuntime(ctx context.Context, c client.Reader, job *trainer.TrainJob) (runtimeInfo, error) {
	ref := job.Spec.RuntimeRef
	var (
		spec trainer.TrainingRuntimeSpec
		info runtimeInfo
		err  error
	)
	switch key := runtimeKey(job); {
	case key == "":
		return runtimeInfo{found: true}, nil
	case key == clusterRuntimeKey(ref.Name):
		var rt trainer.ClusterTrainingRuntime
		err = c.Get(ctx, types.NamespacedName{Name: ref.Name}, &rt)
		spec = rt.Spec
		info.source = annotated{what: fmt.Sprintf("ClusterTrainingRuntime %q", ref.Name), annotations: rt.Annotations}
	default:
		var rt trainer.TrainingRuntime
		err = c.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: ref.Name}, &rt)
		spec = rt.Spec
		info.source = annotated{what: fmt.Sprintf("TrainingRuntime %s/%s", job.Namespace, ref.Name), annotations: rt.Annotations}
	}
	if apierrors.IsNotFound(err) {
		return runtimeInfo{source: info.source}, nil
	}
	if err != nil {
		return runtimeInfo{}, fmt.Errorf("reading %s: %w", info.source.what, err)
	}
	info.found = true
	info.mpi = spec.MLPolicy != nil && spec.MLPolicy.MPI != nil
	return info, nil
}
