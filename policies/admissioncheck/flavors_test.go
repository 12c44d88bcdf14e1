package admissioncheck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func flavor(name string, labels map[string]string, tolerations ...corev1.Toleration) *kueue.ResourceFlavor {
	return &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.ResourceFlavorSpec{NodeLabels: labels, Tolerations: tolerations}}
}

func TestPlacements(t *testing.T) {
	gpuTaint := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	flavors := map[kueue.ResourceFlavorReference]*kueue.ResourceFlavor{
		"cpu-eu": flavor("cpu-eu", map[string]string{"topology.kubernetes.io/region": "eu-west-1"}),
		"gpu-eu": flavor("gpu-eu", map[string]string{"topology.kubernetes.io/region": "eu-west-1", "gpu": "a100"}, gpuTaint),
		"plain":  flavor("plain", nil),
	}
	adm := &kueue.Admission{ClusterQueue: "cq", PodSetAssignments: []kueue.PodSetAssignment{
		{Name: "launcher", Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{"cpu": "cpu-eu", "memory": "cpu-eu"}},
		{Name: "node", Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{"cpu": "cpu-eu", "nvidia.com/gpu": "gpu-eu"}},
		{Name: "initializer", Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{"cpu": "plain"}},
	}}
	got, err := placements(adm, flavors)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]podSetPlacement{
		"launcher": {nodeSelector: map[string]string{"topology.kubernetes.io/region": "eu-west-1"}},
		"node":     {nodeSelector: map[string]string{"topology.kubernetes.io/region": "eu-west-1", "gpu": "a100"}, tolerations: []corev1.Toleration{gpuTaint}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(podSetPlacement{})); diff != "" {
		t.Errorf("placements (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]kueue.ResourceFlavorReference{"cpu-eu", "gpu-eu", "plain"}, flavorNames(adm)); diff != "" {
		t.Errorf("flavorNames (-want +got):\n%s", diff)
	}

	delete(flavors, "gpu-eu")
	if _, err := placements(adm, flavors); err == nil {
		t.Error("placements with a missing ResourceFlavor: no error")
	}
}

func TestResumed(t *testing.T) {
	own := trainer.RuntimePatch{Manager: "mpiguard.io/admission"}
	job := &trainer.TrainJob{Spec: trainer.TrainJobSpec{Suspend: ptr.To(true), RuntimePatches: []trainer.RuntimePatch{own}}}
	placed := map[string]podSetPlacement{
		"node":     {nodeSelector: map[string]string{"zone": "us"}},
		"launcher": {tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}},
	}
	got := resumed(job, placed)
	want := &trainer.TrainJob{Spec: trainer.TrainJobSpec{Suspend: ptr.To(false), RuntimePatches: []trainer.RuntimePatch{own, {
		Manager: KueueManager,
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{
			{Name: "launcher", Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{Spec: &trainer.PodSpecPatch{
				Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}}}}}},
			{Name: "node", Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{Spec: &trainer.PodSpecPatch{
				NodeSelector: map[string]string{"zone": "us"}}}}}},
		}}}},
	}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resumed (-want +got):\n%s", diff)
	}
	if !*job.Spec.Suspend || len(job.Spec.RuntimePatches) != 1 {
		t.Error("resumed modified the stored job")
	}
	if diff := cmp.Diff(&trainer.TrainJob{Spec: trainer.TrainJobSpec{Suspend: ptr.To(false), RuntimePatches: []trainer.RuntimePatch{own}}}, resumed(job, nil)); diff != "" {
		t.Errorf("resumed without placements (-want +got):\n%s", diff)
	}
}
