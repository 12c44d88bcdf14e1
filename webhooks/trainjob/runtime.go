package trainjob

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Runtime is the (Cluster)TrainingRuntime a TrainJob refers to.
type Runtime struct {
	Kind string
	Name string
	Spec trainer.TrainingRuntimeSpec
}

// IsMPI tells whether the runtime's ML policy is MPI.
func (r Runtime) IsMPI() bool { return r.Spec.MLPolicy != nil && r.Spec.MLPolicy.MPI != nil }

// RuntimeGetter reads the runtime a TrainJob refers to (from the manager's cache).
type RuntimeGetter struct {
	Reader client.Reader
}

// Get returns the runtime of job, or an error that says which runtime is missing and why.
func (g RuntimeGetter) Get(ctx context.Context, job *trainer.TrainJob) (Runtime, error) {
	ref := job.Spec.RuntimeRef
	kind := ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind)
	rt := Runtime{Kind: kind, Name: ref.Name}
	var err error
	switch kind {
	case trainer.ClusterTrainingRuntimeKind:
		var ctr trainer.ClusterTrainingRuntime
		err = g.Reader.Get(ctx, client.ObjectKey{Name: ref.Name}, &ctr)
		rt.Spec = ctr.Spec
	case trainer.TrainingRuntimeKind:
		var tr trainer.TrainingRuntime
		err = g.Reader.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: ref.Name}, &tr)
		rt.Spec = tr.Spec
	default:
		return rt, fmt.Errorf("spec.runtimeRef.kind: Unsupported value %q: mpiguard evaluates TrainJobs that refer to a ClusterTrainingRuntime or TrainingRuntime", kind)
	}
	if apierrors.IsNotFound(err) {
		return rt, fmt.Errorf("spec.runtimeRef: %s %q not found, so mpiguard cannot tell what this TrainJob would create; create the runtime first or fix spec.runtimeRef.name", kind, ref.Name)
	}
	if err != nil {
		return rt, fmt.Errorf("reading %s %q: %w", kind, ref.Name, err)
	}
	return rt, nil
}
