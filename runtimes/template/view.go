package template

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// templateView is an MPI runtime as the rules see it: the launcher and Worker
// replicated jobs found by name, with their field paths.
type templateView struct {
	spec *trainer.TrainingRuntimeSpec

	launcher *jobView
	worker   *jobView
	others   []*jobView
}

type jobView struct {
	job  *jobsetv1alpha2.ReplicatedJob
	path *field.Path // spec.template.spec.replicatedJobs[i]
}

// podSpec is the job's pod template spec and its path.
func (j *jobView) podSpec() (*corev1.PodSpec, *field.Path) {
	return &j.job.Template.Spec.Template.Spec, j.path.Child("template", "spec", "template", "spec")
}

// podMeta returns the pod template's labels and annotations and their path.
func (j *jobView) podMetaPath() *field.Path {
	return j.path.Child("template", "spec", "template", "metadata")
}

// hasAncestorLabel reports whether the job carries the Trainer's ancestor label
// with value "trainer": the job that receives the TrainJob's command, args,
// image and resources.
func (j *jobView) hasAncestorLabel() bool {
	return j.job.Template.Labels[trainerconstants.LabelTrainJobAncestor] == trainerconstants.AncestorTrainer
}

func (j *jobView) nodeContainer() (*corev1.Container, int) {
	spec := &j.job.Template.Spec.Template.Spec
	for i := range spec.Containers {
		if spec.Containers[i].Name == trainerconstants.Node {
			return &spec.Containers[i], i
		}
	}
	return nil, -1
}

// isMPI reports whether the runtime has an MPI policy: only those are governed.
func isMPI(spec *trainer.TrainingRuntimeSpec) bool {
	return spec.MLPolicy != nil && spec.MLPolicy.MPI != nil
}

func newTemplateView(spec *trainer.TrainingRuntimeSpec) *templateView {
	v := &templateView{spec: spec}
	rjPath := field.NewPath("spec", "template", "spec", "replicatedJobs")
	for i := range spec.Template.Spec.ReplicatedJobs {
		j := &jobView{job: &spec.Template.Spec.ReplicatedJobs[i], path: rjPath.Index(i)}
		switch j.job.Name {
		case trainerconstants.Launcher:
			v.launcher = j
		case trainerconstants.Node:
			v.worker = j
		default:
			v.others = append(v.others, j)
		}
	}
	return v
}

// mpiJobs are the launcher and Worker jobs that exist.
func (v *templateView) mpiJobs() []*jobView {
	var out []*jobView
	for _, j := range []*jobView{v.worker, v.launcher} {
		if j != nil {
			out = append(out, j)
		}
	}
	return out
}
