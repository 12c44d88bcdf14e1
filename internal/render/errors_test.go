package render

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

func TestRenderErrors(t *testing.T) {
	defaulted := func(tj *trainer.TrainJob) *trainer.TrainJob {
		if err := ApplyDefaults(tj); err != nil {
			t.Fatal(err)
		}
		return tj
	}
	defaultedRuntime := func(rt *trainer.ClusterTrainingRuntime) *trainer.ClusterTrainingRuntime {
		if err := ApplyDefaults(rt); err != nil {
			t.Fatal(err)
		}
		return rt
	}
	cases := map[string]struct {
		in      Input
		wantErr string
	}{
		"no TrainJob": {
			in:      Input{Runtime: mpiRuntime()},
			wantErr: "no TrainJob given",
		},
		"no runtime": {
			in:      Input{TrainJob: trainJob()},
			wantErr: `no runtime given for spec.runtimeRef "openmpi"`,
		},
		"typed nil runtime": {
			in:      Input{TrainJob: trainJob(), Runtime: (*trainer.ClusterTrainingRuntime)(nil)},
			wantErr: "no runtime given",
		},
		"runtime of another type": {
			in:      Input{TrainJob: trainJob(), Runtime: &corev1.ConfigMap{}},
			wantErr: "runtime has type *v1.ConfigMap",
		},
		"runtime with another name": {
			in: Input{TrainJob: trainJob(), Runtime: defaultedRuntime(func() *trainer.ClusterTrainingRuntime {
				rt := mpiRuntime()
				rt.Name = "other"
				return rt
			}())},
			wantErr: `refers to ClusterTrainingRuntime "openmpi" but the runtime given is ClusterTrainingRuntime "other"`,
		},
		"TrainJob refers to a TrainingRuntime, ClusterTrainingRuntime given": {
			in: Input{TrainJob: func() *trainer.TrainJob {
				tj := trainJob()
				tj.Spec.RuntimeRef.Kind = ptr.To(trainer.TrainingRuntimeKind)
				return tj
			}(), Runtime: defaultedRuntime(mpiRuntime())},
			wantErr: `refers to TrainingRuntime "openmpi" but the runtime given is ClusterTrainingRuntime`,
		},
		"TrainingRuntime of another namespace": {
			in: Input{TrainJob: func() *trainer.TrainJob {
				tj := trainJob()
				tj.Spec.RuntimeRef.Kind = ptr.To(trainer.TrainingRuntimeKind)
				return tj
			}(), Runtime: &trainer.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "openmpi", Namespace: "team-b"}, Spec: mpiRuntime().Spec}},
			wantErr: "is in another namespace",
		},
		"unknown runtime kind": {
			in: Input{TrainJob: func() *trainer.TrainJob {
				tj := trainJob()
				tj.Spec.RuntimeRef.APIGroup = ptr.To("example.com")
				return tj
			}(), Runtime: defaultedRuntime(mpiRuntime())},
			wantErr: `is not a runtime kind the Trainer supports`,
		},
		"runtime not defaulted": {
			in:      Input{TrainJob: trainJob(numNodes(2)), Runtime: mpiRuntime()},
			wantErr: "spec.mlPolicy.mpi has no [numProcPerNode mpiImplementation sshAuthMountPath]",
		},
		"numNodes above MaxNumNodes": {
			in:      Input{TrainJob: defaulted(trainJob(numNodes(MaxNumNodes + 1))), Runtime: defaultedRuntime(mpiRuntime())},
			wantErr: "spec.trainer.numNodes 10001 is more than the 10000 nodes mpiguard renders",
		},
		"empty runtimeRef": {
			in: Input{TrainJob: func() *trainer.TrainJob {
				tj := trainJob()
				tj.Spec.RuntimeRef.Name = ""
				return tj
			}(), Runtime: mpiRuntime()},
			wantErr: "spec.runtimeRef.name is empty",
		},
		"unsupported MPI implementation": {
			in: Input{TrainJob: defaulted(trainJob(numNodes(2))), Runtime: func() *trainer.ClusterTrainingRuntime {
				rt := defaultedRuntime(mpiRuntime())
				rt.Spec.MLPolicy.MPI.MPIImplementation = ptr.To(trainer.MPIImplementationMPICH)
				return rt
			}()},
			wantErr: `has spec.mlPolicy.mpi.mpiImplementation "MPICH", but Trainer v2.3.0 only builds OpenMPI launchers`,
		},
		// The Trainer would drop the patch, and its webhook refuses the TrainJob:
		// refused here too, so it is never allowed without a word (hostile table).
		"runtime patch for a replicated job the runtime lacks": {
			in: Input{TrainJob: defaulted(trainJob(numNodes(1), nodeSelectorPatch("x.io/m", map[string]string{"a": "b"}, "ghost"))),
				Runtime: defaultedRuntime(mpiRuntime())},
			wantErr: `spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].name: Invalid value: "ghost"`,
		},
	}
	r := renderer(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			view, err := r.Render(context.Background(), tc.in)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Render: unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Render succeeded (%d replicated jobs), want error containing %q", len(view.ReplicatedJobs), tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestRendererNotInitialised(t *testing.T) {
	var r *Renderer
	if _, err := r.Render(context.Background(), Input{}); err == nil {
		t.Fatal("nil Renderer rendered")
	}
}

func TestApplyDefaults(t *testing.T) {
	rt := mpiRuntime()
	tj := trainJob()
	lr := limitRange("lr", corev1.LimitRangeItem{Max: rl("cpu=4"), Min: rl("memory=1Gi")})
	if err := ApplyDefaults(rt, tj, &lr); err != nil {
		t.Fatal(err)
	}
	gotMPI := rt.Spec.MLPolicy.MPI
	wantMPI := &trainer.MPIMLPolicySource{
		NumProcPerNode:    ptr.To[int32](1),
		MPIImplementation: ptr.To(trainer.MPIImplementationOpenMPI),
		SSHAuthMountPath:  ptr.To("/root/.ssh"),
		RunLauncherAsNode: ptr.To(false),
	}
	if diff := cmp.Diff(wantMPI, gotMPI); diff != "" {
		t.Errorf("mlPolicy.mpi defaults (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(trainer.RuntimeRef{
		Name: "openmpi", APIGroup: ptr.To("trainer.kubeflow.org"), Kind: ptr.To(trainer.ClusterTrainingRuntimeKind),
	}, tj.Spec.RuntimeRef); diff != "" {
		t.Errorf("runtimeRef defaults (-want +got):\n%s", diff)
	}
	if got := rt.Spec.Template.Spec.ReplicatedJobs[0].Replicas; got != 1 {
		t.Errorf("replicated job replicas defaulted to %d, want 1", got)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "4"}, strs(lr.Spec.Limits[0].Default)); diff != "" {
		t.Errorf("LimitRange default (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "4", "memory": "1Gi"}, strs(lr.Spec.Limits[0].DefaultRequest)); diff != "" {
		t.Errorf("LimitRange defaultRequest (-want +got):\n%s", diff)
	}

	// Defaulting twice changes nothing.
	rt2, tj2 := rt.DeepCopy(), tj.DeepCopy()
	if err := ApplyDefaults(rt2, tj2); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rt, rt2); diff != "" {
		t.Errorf("second ApplyDefaults changed the runtime:\n%s", diff)
	}
	if diff := cmp.Diff(tj, tj2); diff != "" {
		t.Errorf("second ApplyDefaults changed the TrainJob:\n%s", diff)
	}

	// Values set by the author are kept.
	custom := mpiRuntime(launcherAsNode(true), runtimeProcPerNode(8))
	if err := ApplyDefaults(custom); err != nil {
		t.Fatal(err)
	}
	if got := *custom.Spec.MLPolicy.MPI.NumProcPerNode; got != 8 {
		t.Errorf("numProcPerNode = %d, want the author's 8", got)
	}
	if !*custom.Spec.MLPolicy.MPI.RunLauncherAsNode {
		t.Error("runLauncherAsNode lost the author's true")
	}
}
