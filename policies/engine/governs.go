package engine

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Governs says whether TrainJobs of this (Cluster)TrainingRuntime are governed
// by the policies: only MPI runtimes (spec.mlPolicy.mpi) are. Webhooks call it
// before rendering so other TrainJobs pass untouched and fast.
func Governs(runtime client.Object) bool {
	switch r := runtime.(type) {
	case *trainer.ClusterTrainingRuntime:
		return r.Spec.MLPolicy != nil && r.Spec.MLPolicy.MPI != nil
	case *trainer.TrainingRuntime:
		return r.Spec.MLPolicy != nil && r.Spec.MLPolicy.MPI != nil
	}
	return false
}
