package trainjob

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateMPI checks an MPI TrainJob. It is the structural floor every policy set
// relies on (a job without Workers has no hostfile to run on).
func validateMPI(job *trainer.TrainJob, rt Runtime) field.ErrorList {
	var errs field.ErrorList
	numNodes := int32(1)
	if rt.Spec.MLPolicy.NumNodes != nil {
		numNodes = *rt.Spec.MLPolicy.NumNodes
	}
	path := field.NewPath("spec", "mlPolicy", "numNodes")
	if job.Spec.Trainer != nil && job.Spec.Trainer.NumNodes != nil {
		numNodes = *job.Spec.Trainer.NumNodes
		path = field.NewPath("spec", "trainer", "numNodes")
	}
	if numNodes < 1 {
		errs = append(errs, field.Invalid(path, numNodes,
			"an MPI TrainJob needs at least 1 Worker, otherwise mpirun has an empty hostfile and the Launcher fails; set spec.trainer.numNodes to 1 or more"))
	}
	return errs
}
