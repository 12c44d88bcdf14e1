package template

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// curated returns a deep copy of a curated runtime's spec: a known-good base.
func curated(t *testing.T, name string) *trainer.TrainingRuntimeSpec {
	t.Helper()
	all, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range all {
		if rt.Name == name {
			return rt.Spec.DeepCopy()
		}
	}
	t.Fatalf("no curated runtime %s", name)
	return nil
}

const (
	worker   = 0 // index of the node job in the curated templates
	launcher = 1
)

func rj(i int) *field.Path {
	return field.NewPath("spec", "template", "spec", "replicatedJobs").Index(i)
}

func podSpecPath(i int) *field.Path { return rj(i).Child("template", "spec", "template", "spec") }

var ignoreDetail = cmpopts.IgnoreFields(field.Error{}, "BadValue", "Detail")

func TestValidateSpec(t *testing.T) {
	cases := map[string]struct {
		base         string
		mutate       func(s *trainer.TrainingRuntimeSpec)
		wantErrs     field.ErrorList
		wantWarnings field.ErrorList
	}{
		"curated OpenMPI runtime is clean": {
			base:   "mpiguard-openmpi-v2",
			mutate: func(*trainer.TrainingRuntimeSpec) {},
		},
		"non-MPI runtime is not governed": {
			base: "mpiguard-openmpi-v2",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy.MPI = nil
				s.MLPolicy.Torch = &trainer.TorchMLPolicySource{}
				s.Template.Spec.ReplicatedJobs[launcher].Replicas = 3
			},
		},
		"launcher container not named node": {
			base: "mpiguard-openmpi-v2",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[launcher].Template.Spec.Template.Spec.Containers[0].Name = "launcher"
			},
			wantErrs: field.ErrorList{field.Invalid(podSpecPath(launcher).Child("containers"), nil, "")},
		},
		"ancestor-labelled launcher that is not a node: TrainJobs cannot size Workers": {
			base: "mpiguard-openmpi-v2",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy.MPI.RunLauncherAsNode = ptr.To(false)
			},
			wantWarnings: field.ErrorList{field.Invalid(field.NewPath("spec", "mlPolicy", "mpi", "runLauncherAsNode"), nil, "")},
		},
		"ancestor label on both jobs": {
			base: "mpiguard-openmpi-v2",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[worker].Template.Labels = map[string]string{trainerconstants.LabelTrainJobAncestor: trainerconstants.AncestorTrainer}
			},
			wantErrs: field.ErrorList{field.Invalid(rj(worker).Child("template", "metadata", "labels").Key(trainerconstants.LabelTrainJobAncestor), nil, "")},
		},
		"ancestor label on neither job": {
			base: "mpiguard-openmpi-v2",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[launcher].Template.Labels = nil
			},
			wantErrs: field.ErrorList{field.Required(rj(launcher).Child("template", "metadata", "labels").Key(trainerconstants.LabelTrainJobAncestor), "")},
		},
		"numNodes 2 with an ancestor-labelled launcher": {
			base: "mpiguard-openmpi-v2",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy.NumNodes = ptr.To[int32](2)
			},
			wantErrs: field.ErrorList{field.Invalid(field.NewPath("spec", "mlPolicy", "numNodes"), nil, "")},
		},
		"numNodes 2 is fine when the Worker job carries the label": {
			base: "mpiguard-openmpi-v2",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.MLPolicy.NumNodes = ptr.To[int32](2)
				s.Template.Spec.ReplicatedJobs[launcher].Template.Labels = nil
				s.Template.Spec.ReplicatedJobs[worker].Template.Labels = map[string]string{trainerconstants.LabelTrainJobAncestor: trainerconstants.AncestorTrainer}
			},
		},
		"replicas 2 on the Worker job": {
			base: "mpiguard-openmpi-v2",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[worker].Replicas = 2
			},
			wantErrs: field.ErrorList{field.Invalid(rj(worker).Child("replicas"), nil, "")},
		},
		"volcano policy with the default scheduler": {
			base: "mpiguard-openmpi-v2-volcano",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[launcher].Template.Spec.Template.Spec.SchedulerName = ""
			},
			wantErrs: field.ErrorList{
				field.Invalid(podSpecPath(launcher).Child("schedulerName"), nil, ""),
				field.Invalid(podSpecPath(worker).Child("schedulerName"), nil, ""),
			},
		},
		"coscheduling policy with the volcano scheduler": {
			base: "mpiguard-openmpi-v2-coscheduling",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				for i := range s.Template.Spec.ReplicatedJobs {
					s.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.SchedulerName = catalog.VolcanoSchedulerName
				}
			},
			wantErrs: field.ErrorList{
				field.Invalid(podSpecPath(worker).Child("schedulerName"), nil, ""),
				field.Invalid(podSpecPath(launcher).Child("schedulerName"), nil, ""),
			},
		},
		"volcano scheduler without a PodGroup policy warns": {
			base: "mpiguard-openmpi-v2",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[worker].Template.Spec.Template.Spec.SchedulerName = catalog.VolcanoSchedulerName
			},
			wantWarnings: field.ErrorList{field.Invalid(podSpecPath(worker).Child("schedulerName"), nil, "")},
		},
		"both PodGroup policies": {
			base: "mpiguard-openmpi-v2-volcano",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.PodGroupPolicy.Coscheduling = &trainer.CoschedulingPodGroupPolicySource{}
			},
			wantErrs: field.ErrorList{field.Invalid(field.NewPath("spec", "podGroupPolicy"), nil, "")},
		},
		"job and pod activeDeadlineSeconds": {
			base: "mpiguard-mpich-v1",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[worker].Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](3600)
				s.Template.Spec.ReplicatedJobs[launcher].Template.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](600)
			},
			wantErrs: field.ErrorList{
				field.Forbidden(rj(worker).Child("template", "spec", "activeDeadlineSeconds"), ""),
				field.Forbidden(podSpecPath(launcher).Child("activeDeadlineSeconds"), ""),
			},
		},
		"missing Istio opt-out warns": {
			base: "mpiguard-intelmpi-v1",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[launcher].Template.Spec.Template.Labels = nil
			},
			wantWarnings: field.ErrorList{
				field.Required(rj(launcher).Child("template", "spec", "template", "metadata", "labels").Key(istioSidecarInject), ""),
				field.Required(rj(launcher).Child("template", "spec", "template", "metadata", "labels").Key(istioDataplaneMode), ""),
			},
		},
		"sidecar opt-out as an annotation counts": {
			base: "mpiguard-intelmpi-v1",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[launcher].Template.Spec.Template.Labels = map[string]string{istioDataplaneMode: "none"}
				s.Template.Spec.ReplicatedJobs[launcher].Template.Spec.Template.Annotations = map[string]string{istioSidecarInject: "false"}
			},
		},
		"no readiness probe and no dependsOn warn": {
			base: "mpiguard-deepspeed-v1",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[worker].Template.Spec.Template.Spec.Containers[0].ReadinessProbe = nil
				s.Template.Spec.ReplicatedJobs[launcher].DependsOn = nil
			},
			wantWarnings: field.ErrorList{
				field.Required(podSpecPath(worker).Child("containers").Index(0).Child("readinessProbe"), ""),
				field.Required(rj(launcher).Child("dependsOn"), ""),
			},
		},
		"no launcher job": {
			base: "mpiguard-openmpi-v2",
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs = s.Template.Spec.ReplicatedJobs[:1]
			},
			wantErrs: field.ErrorList{field.Required(field.NewPath("spec", "template", "spec", "replicatedJobs"), "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := curated(t, tc.base)
			tc.mutate(spec)
			errs, warnings := ValidateSpec(spec)
			if diff := cmp.Diff(tc.wantErrs, errs, ignoreDetail, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWarnings, warnings, ignoreDetail, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMessagesSayWhatWhyHow pins two full messages: the numbers and the fix.
func TestMessagesSayWhatWhyHow(t *testing.T) {
	spec := curated(t, "mpiguard-openmpi-v2")
	spec.MLPolicy.NumNodes = ptr.To[int32](4)
	spec.Template.Spec.ReplicatedJobs[worker].Replicas = 2
	errs, _ := ValidateSpec(spec)
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		`spec.mlPolicy.numNodes: Invalid value: 4: is 4 but the launcher carries the trainer ancestor label: the Trainer sizes the ancestor-labelled job from mlPolicy.numNodes, so it would start 4 launchers instead of 1; set mlPolicy.numNodes to 1 and let TrainJob.spec.trainer.numNodes set the Worker count`,
		`spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: must be 1: the Trainer does not support replicated MPI jobs (2 copies of the "node" job would each get their own pods but one hostfile); scale Workers with TrainJob.spec.trainer.numNodes instead`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// TestEveryCuratedRuntimePasses: mpiguard's own runtimes raise neither errors nor warnings.
func TestEveryCuratedRuntimePasses(t *testing.T) {
	all, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range all {
		errs, warnings := ValidateSpec(&rt.Spec)
		if len(errs)+len(warnings) > 0 {
			t.Errorf("%s: errors %v, warnings %v", rt.Name, errs, warnings)
		}
	}
}
