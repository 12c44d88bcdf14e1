package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainjobutil "github.com/kubeflow/trainer/v2/pkg/util/trainjob"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
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

func TestStartsPods(t *testing.T) {
	job := func(suspend *bool, managedBy *string) *trainer.TrainJob {
		return &trainer.TrainJob{Spec: trainer.TrainJobSpec{RuntimeRef: trainer.RuntimeRef{Name: "mpi"}, Suspend: suspend, ManagedBy: managedBy}}
	}
	yes, no := new(true), new(false)
	trainers, multiKueue := new(trainjobutil.TrainJobControllerName), new(kueue.MultiKueueControllerName)
	for _, tc := range []struct {
		name          string
		req           Request
		want, resumes bool
	}{
		{"create", Request{TrainJob: job(nil, nil)}, true, false},
		{"create, managed by the Trainer", Request{TrainJob: job(nil, trainers)}, true, false},
		{"create suspended", Request{TrainJob: job(yes, nil)}, false, false},
		{"resume", Request{OldTrainJob: job(yes, nil), TrainJob: job(no, nil)}, true, true},
		{"update of a running job", Request{OldTrainJob: job(no, nil), TrainJob: job(no, nil)}, false, false},
		{"update of a suspended job", Request{OldTrainJob: job(yes, nil), TrainJob: job(yes, nil)}, false, false},
		{"suspend", Request{OldTrainJob: job(no, nil), TrainJob: job(yes, nil)}, false, false},
		// MultiKueue runs the job on a worker cluster: no pod is created
		// here, though Kueue on the manager does resume it.
		{"create, managed by MultiKueue", Request{TrainJob: job(nil, multiKueue)}, false, false},
		{"resume, managed by MultiKueue", Request{OldTrainJob: job(yes, multiKueue), TrainJob: job(no, multiKueue)}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, StartsPods(&tc.req)); diff != "" {
				t.Errorf("StartsPods (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.resumes, Resumes(&tc.req)); diff != "" {
				t.Errorf("Resumes (-want +got):\n%s", diff)
			}
		})
	}
}
