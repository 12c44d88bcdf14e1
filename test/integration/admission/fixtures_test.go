package admission

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// userPatch is a user's own runtime patch that sets pod template metadata
// labels and a node selector on one replicated job.
func userPatch(replicatedJob string, labels, nodeSelector map[string]string) trainer.RuntimePatch {
	return fixtures.UserPatch(replicatedJob, labels, nodeSelector)
}
