package jobstate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainjobutil "github.com/kubeflow/trainer/v2/pkg/util/trainjob"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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
			if diff := cmp.Diff(tc.want, OnlySuspends(tc.old, tc.job)); diff != "" {
				t.Errorf("OnlySuspends (-want +got):\n%s", diff)
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
		old, job      *trainer.TrainJob
		want, resumes bool
	}{
		{"create", nil, job(nil, nil), true, false},
		{"create, managed by the Trainer", nil, job(nil, trainers), true, false},
		{"create suspended", nil, job(yes, nil), false, false},
		{"resume", job(yes, nil), job(no, nil), true, true},
		{"update of a running job", job(no, nil), job(no, nil), false, false},
		{"update of a suspended job", job(yes, nil), job(yes, nil), false, false},
		{"suspend", job(no, nil), job(yes, nil), false, false},
		// MultiKueue runs the job on a worker cluster: no pod is created
		// here, though Kueue on the manager does resume it.
		{"create, managed by MultiKueue", nil, job(nil, multiKueue), false, false},
		{"resume, managed by MultiKueue", job(yes, multiKueue), job(no, multiKueue), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, StartsPods(tc.old, tc.job)); diff != "" {
				t.Errorf("StartsPods (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.resumes, Resumes(tc.old, tc.job)); diff != "" {
				t.Errorf("Resumes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreatesPods(t *testing.T) {
	now := metav1.Now()
	cases := map[string]struct {
		mod  func(*trainer.TrainJob)
		want bool
	}{
		"running":                              {func(*trainer.TrainJob) {}, true},
		"suspended":                            {func(j *trainer.TrainJob) { j.Spec.Suspend = ptr.To(true) }, false},
		"deleted":                              {func(j *trainer.TrainJob) { j.DeletionTimestamp = &now }, false},
		"run by MultiKueue on another cluster": {func(j *trainer.TrainJob) { j.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue") }, false},
		"complete": {func(j *trainer.TrainJob) {
			j.Status.Conditions = []metav1.Condition{{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue}}
		}, false},
		"failed": {func(j *trainer.TrainJob) {
			j.Status.Conditions = []metav1.Condition{{Type: trainer.TrainJobFailed, Status: metav1.ConditionTrue}}
		}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := &trainer.TrainJob{}
			tc.mod(j)
			if got := CreatesPods(j); got != tc.want {
				t.Errorf("CreatesPods = %v, want %v", got, tc.want)
			}
		})
	}
}
