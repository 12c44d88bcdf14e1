package admission

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// userPatch is a user's own runtime patch that sets pod template metadata
// labels and a node selector on one replicated job.
func userPatch(replicatedJob string, labels, nodeSelector map[string]string) trainer.RuntimePatch {
	return trainer.RuntimePatch{
		Manager: "example.com/user",
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
			Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
				Name: replicatedJob,
				Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
					Metadata: &metav1.ObjectMeta{Labels: labels},
					Spec:     &trainer.PodSpecPatch{NodeSelector: nodeSelector},
				}}},
			}}},
		}},
	}
}
