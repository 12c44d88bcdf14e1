package follow

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mpiguard/mpiguard/internal/jobstate"
)

// jobMetrics is what one job counts for.
type jobMetrics struct{}

func (r *Reconciler) count(types.NamespacedName, *trainer.TrainJob, *followed, jobstate.Observation, jobstate.Phase) {
}

func (r *Reconciler) uncount(types.NamespacedName, *followed) {}
