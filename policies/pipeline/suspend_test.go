package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

func TestOnlySuspends(t *testing.T) {
	job := func(suspend *bool, numNodes int32) *trainer.TrainJob {
		return &trainer.TrainJob{Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: "mpi"},
			Suspend:    suspend,
			Trainer:    &trainer.Trainer{NumNodes: &numNodes},
		}}
	}
	yes, no := new(true), new(false)
	for _, tc := range []struct {
		name     string
		old, job *trainer.TrainJob
		want     bool
	}{
		{"false to true", job(no, 2), job(yes, 2), true},
		{"unset to true", job(nil, 2), job(yes, 2), true},
		{"suspends and changes numNodes", job(no, 2), job(yes, 4), false},
		{"already suspended", job(yes, 2), job(yes, 2), false},
		{"resume", job(yes, 2), job(no, 2), false},
		{"unset to false", job(nil, 2), job(no, 2), false},
		{"no change", job(no, 2), job(no, 2), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, onlySuspends(tc.old, tc.job)); diff != "" {
				t.Errorf("onlySuspends (-want +got):\n%s", diff)
			}
		})
	}
}
