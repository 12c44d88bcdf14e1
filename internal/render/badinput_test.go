package render

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// TestRenderOddInputNeverPanics feeds shapes the CRDs allow but real runtimes
// rarely have: Render must return a view or an error, never crash the webhook.
func TestRenderOddInputNeverPanics(t *testing.T) {
	cases := map[string]struct {
		runtime  *trainer.ClusterTrainingRuntime
		trainJob *trainer.TrainJob
	}{
		"no trainer section": {
			runtime:  mpiRuntime(),
			trainJob: func() *trainer.TrainJob { tj := trainJob(); tj.Spec.Trainer = nil; return tj }(),
		},
		"no mlPolicy": {
			runtime: func() *trainer.ClusterTrainingRuntime {
				rt := mpiRuntime()
				rt.Spec.MLPolicy = nil
				return rt
			}(),
			trainJob: trainJob(numNodes(2)),
		},
		"no replicated jobs": {
			runtime: func() *trainer.ClusterTrainingRuntime {
				rt := mpiRuntime()
				rt.Spec.Template.Spec.ReplicatedJobs = nil
				return rt
			}(),
			trainJob: trainJob(numNodes(2)),
		},
		"replicated job without containers": {
			runtime: func() *trainer.ClusterTrainingRuntime {
				rt := mpiRuntime()
				rt.Spec.Template.Spec.ReplicatedJobs = append(rt.Spec.Template.Spec.ReplicatedJobs,
					jobsetv1alpha2.ReplicatedJob{Name: "empty", Template: batchv1.JobTemplateSpec{}})
				return rt
			}(),
			trainJob: trainJob(numNodes(2), resourcesPerNode(nil, rl("cpu=1"))),
		},
		"MPI runtime without launcher": {
			runtime: func() *trainer.ClusterTrainingRuntime {
				rt := mpiRuntime(launcherAsNode(true))
				rt.Spec.Template.Spec.ReplicatedJobs = rt.Spec.Template.Spec.ReplicatedJobs[:1]
				return rt
			}(),
			trainJob: trainJob(numNodes(3)),
		},
		"negative numNodes": {
			runtime:  mpiRuntime(),
			trainJob: trainJob(numNodes(-4)),
		},
		"negative quantity": {
			runtime:  mpiRuntime(),
			trainJob: trainJob(numNodes(1), resourcesPerNode(nil, rl("cpu=-1"))),
		},
		"huge numNodes": {
			runtime:  mpiRuntime(),
			trainJob: trainJob(numNodes(MaxNumNodes), resourcesPerNode(nil, rl("memory=1Ei"))),
		},
		"numNodes above MaxNumNodes": {
			runtime:  mpiRuntime(),
			trainJob: trainJob(numNodes(MaxNumNodes + 1)),
		},
		"pod-level resources with odd names": {
			runtime:  mpiRuntime(podResources("node", rl("nvidia.com/gpu=1"), rl("hugepages-2Mi=1Gi"))),
			trainJob: trainJob(numNodes(1)),
		},
		"runtime patch replacing containers": {
			runtime: mpiRuntime(),
			trainJob: func() *trainer.TrainJob {
				tj := trainJob(numNodes(1))
				tj.Spec.RuntimePatches = []trainer.RuntimePatch{{Manager: "x.io/y", TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{
					Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
						Name: "node", Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
							Spec: &trainer.PodSpecPatch{Containers: []trainer.ContainerPatch{{Name: "ghost"}}, ServiceAccountName: ptr.To("")},
						}}},
					}}}},
				}}}
				return tj
			}(),
		},
		"runtime class of empty name": {
			runtime:  mpiRuntime(runtimeClass("node", "")),
			trainJob: trainJob(numNodes(1), resourcesPerNode(corev1.ResourceList{}, corev1.ResourceList{})),
		},
	}
	r := renderer(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := ApplyDefaults(tc.runtime, tc.trainJob); err != nil {
				t.Fatalf("ApplyDefaults: %v", err)
			}
			view, err := r.Render(context.Background(), Input{TrainJob: tc.trainJob, Runtime: tc.runtime})
			if (view == nil) == (err == nil) {
				t.Fatalf("want exactly one of view and error, got view=%v err=%v", view != nil, err)
			}
			if err != nil {
				t.Logf("error: %v", err)
				return
			}
			if view.Total.Pods < 0 {
				t.Errorf("negative pod count %d", view.Total.Pods)
			}
			t.Logf("%d replicated jobs, %d pods, %d problems", len(view.ReplicatedJobs), view.Total.Pods, len(view.Problems))
		})
	}
}
