package kueuecheck

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func flavor(name string, labels map[string]string, tolerations ...corev1.Toleration) *kueue.ResourceFlavor {
	return &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.ResourceFlavorSpec{NodeLabels: labels, Tolerations: tolerations}}
}

func flavorClient(t *testing.T, flavors ...*kueue.ResourceFlavor) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := kueue.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := make([]client.Object, len(flavors))
	for i, f := range flavors {
		objs[i] = f
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func TestPlacements(t *testing.T) {
	gpuTaint := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	c := flavorClient(t,
		flavor("cpu-eu", map[string]string{"topology.kubernetes.io/region": "eu-west-1"}),
		flavor("gpu-eu", map[string]string{"topology.kubernetes.io/region": "eu-west-1", "gpu": "a100"}, gpuTaint),
		flavor("plain", nil),
	)
	adm := &kueue.Admission{ClusterQueue: "cq", PodSetAssignments: []kueue.PodSetAssignment{
		{Name: "launcher", Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{"cpu": "cpu-eu", "memory": "cpu-eu"}},
		{Name: "node", Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{"cpu": "cpu-eu", "nvidia.com/gpu": "gpu-eu"}},
		{Name: "initializer", Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{"cpu": "plain"}},
	}}
	got, err := placements(context.Background(), c, adm)
	if err != nil {
		t.Fatal(err)
	}
	want := []podSetPlacement{
		{name: "launcher", nodeSelector: map[string]string{"topology.kubernetes.io/region": "eu-west-1"}},
		{name: "node", nodeSelector: map[string]string{"topology.kubernetes.io/region": "eu-west-1", "gpu": "a100"}, tolerations: []corev1.Toleration{gpuTaint}},
		{name: "initializer", nodeSelector: map[string]string{}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(podSetPlacement{})); diff != "" {
		t.Errorf("placements (-want +got):\n%s", diff)
	}

	adm.PodSetAssignments[1].Flavors["nvidia.com/gpu"] = "gone"
	if _, err := placements(context.Background(), c, adm); err == nil {
		t.Error("placements with a missing ResourceFlavor: no error")
	}
}

func TestResumed(t *testing.T) {
	own := trainer.RuntimePatch{Manager: "mpiguard.io/admission"}
	// Kueue v0.17's webhook adds its entry at create, with the queue label.
	queued := trainer.RuntimePatch{Manager: KueueManager, TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
		Metadata: &metav1.ObjectMeta{Labels: map[string]string{"kueue.x-k8s.io/queue-name": "q"}},
		Spec:     &trainer.JobSetSpecPatch{},
	}}}
	infos := []podSetPlacement{
		{name: "launcher", tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}},
		{name: "node", nodeSelector: map[string]string{"zone": "us"}},
	}
	placed := []trainer.ReplicatedJobPatch{
		{Name: "launcher", Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
			Spec: &trainer.PodSpecPatch{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}}}}}},
		{Name: "node", Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
			Spec: &trainer.PodSpecPatch{NodeSelector: map[string]string{"zone": "us"}}}}}},
	}
	withPlacement := func(p trainer.RuntimePatch) trainer.RuntimePatch {
		p = *p.DeepCopy()
		p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs = placed
		return p
	}
	job := func(patches ...trainer.RuntimePatch) *trainer.TrainJob {
		return &trainer.TrainJob{Spec: trainer.TrainJobSpec{Suspend: ptr.To(true), RuntimePatches: patches}}
	}
	running := func(patches ...trainer.RuntimePatch) *trainer.TrainJob {
		j := job(patches...)
		j.Spec.Suspend = ptr.To(false)
		return j
	}
	bare := trainer.RuntimePatch{Manager: KueueManager, TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{}}}}
	for _, tc := range []struct {
		name  string
		job   *trainer.TrainJob
		infos []podSetPlacement
		want  *trainer.TrainJob
	}{
		{"Kueue's entry filled in place", job(queued, own), infos, running(withPlacement(queued), own)},
		{"no Kueue entry (Kueue before v0.17, or its webhook not registered): one after the others", job(own), infos, running(own, withPlacement(bare))},
		{"nothing to place", job(queued, own), nil, running(queued, own)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.job.DeepCopy()
			if diff := cmp.Diff(tc.want, resumed(tc.job, tc.infos)); diff != "" {
				t.Errorf("resumed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.job); diff != "" {
				t.Errorf("resumed modified the stored job (-before +after):\n%s", diff)
			}
		})
	}
}
