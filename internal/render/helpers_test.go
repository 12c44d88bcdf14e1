package render

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
)

// The test runtime has the shape of the Trainer's upstream MPI runtimes
// (deepspeed-distributed, mlx-distributed): a "node" replicated job of sshd workers
// and a "launcher" replicated job labelled as the trainer ancestor.

var (
	testRendererOnce sync.Once
	testRenderer     *Renderer
	testRendererErr  error
)

func renderer(t testing.TB) *Renderer {
	t.Helper()
	testRendererOnce.Do(func() { testRenderer, testRendererErr = NewRenderer(context.Background()) })
	if testRendererErr != nil {
		t.Fatalf("NewRenderer: %v", testRendererErr)
	}
	return testRenderer
}

// rl parses "cpu=4", "memory=32Gi" ... into a ResourceList.
func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

type runtimeOption func(*trainer.TrainingRuntimeSpec)

func mpiRuntime(opts ...runtimeOption) *trainer.ClusterTrainingRuntime {
	rt := &trainer.ClusterTrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "openmpi"},
		Spec: trainer.TrainingRuntimeSpec{
			MLPolicy: &trainer.MLPolicy{
				NumNodes:       ptr.To[int32](1),
				MLPolicySource: trainer.MLPolicySource{MPI: &trainer.MPIMLPolicySource{}},
			},
			Template: trainer.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
				ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{
					{Name: constants.Node, Template: jobTemplate(nil, corev1.Container{Name: constants.Node, Image: "mpi"})},
					{Name: constants.Launcher, Template: jobTemplate(
						map[string]string{constants.LabelTrainJobAncestor: constants.AncestorTrainer},
						corev1.Container{Name: constants.Node, Image: "mpi"})},
				},
			}},
		},
	}
	for _, o := range opts {
		o(&rt.Spec)
	}
	return rt
}

func jobTemplate(labels map[string]string, containers ...corev1.Container) batchv1.JobTemplateSpec {
	t := batchv1.JobTemplateSpec{}
	t.Labels = labels
	t.Spec.Template.Spec.Containers = containers
	return t
}

func replicatedJob(spec *trainer.TrainingRuntimeSpec, name string) *jobsetv1alpha2.ReplicatedJob {
	for i := range spec.Template.Spec.ReplicatedJobs {
		if spec.Template.Spec.ReplicatedJobs[i].Name == name {
			return &spec.Template.Spec.ReplicatedJobs[i]
		}
	}
	panic("no replicated job " + name)
}

func launcherAsNode(v bool) runtimeOption {
	return func(s *trainer.TrainingRuntimeSpec) { s.MLPolicy.MPI.RunLauncherAsNode = ptr.To(v) }
}

func runtimeProcPerNode(n int32) runtimeOption {
	return func(s *trainer.TrainingRuntimeSpec) { s.MLPolicy.MPI.NumProcPerNode = ptr.To(n) }
}

// containerResources sets the "node" container's resources of replicated job rj.
func containerResources(rj string, requests, limits corev1.ResourceList) runtimeOption {
	return func(s *trainer.TrainingRuntimeSpec) {
		c := &replicatedJob(s, rj).Template.Spec.Template.Spec.Containers[0]
		c.Resources = corev1.ResourceRequirements{Requests: requests, Limits: limits}
	}
}

func initContainers(rj string, cs ...corev1.Container) runtimeOption {
	return func(s *trainer.TrainingRuntimeSpec) {
		replicatedJob(s, rj).Template.Spec.Template.Spec.InitContainers = cs
	}
}

func runtimeClass(rj, name string) runtimeOption {
	return func(s *trainer.TrainingRuntimeSpec) {
		replicatedJob(s, rj).Template.Spec.Template.Spec.RuntimeClassName = ptr.To(name)
	}
}

func replicas(rj string, n int32) runtimeOption {
	return func(s *trainer.TrainingRuntimeSpec) { replicatedJob(s, rj).Replicas = n }
}

type trainJobOption func(*trainer.TrainJob)

func trainJob(opts ...trainJobOption) *trainer.TrainJob {
	tj := &trainer.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "team-a"},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: "openmpi"},
			Trainer:    &trainer.Trainer{},
		},
	}
	for _, o := range opts {
		o(tj)
	}
	return tj
}

func numNodes(n int32) trainJobOption {
	return func(tj *trainer.TrainJob) { tj.Spec.Trainer.NumNodes = ptr.To(n) }
}

func procPerNode(n int32) trainJobOption {
	return func(tj *trainer.TrainJob) { tj.Spec.Trainer.NumProcPerNode = ptr.To(n) }
}

func resourcesPerNode(requests, limits corev1.ResourceList) trainJobOption {
	return func(tj *trainer.TrainJob) {
		tj.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{Requests: requests, Limits: limits}
	}
}

// nodeSelectorPatch appends a runtime patch setting a node selector on the given
// replicated jobs.
func nodeSelectorPatch(manager string, selector map[string]string, rjs ...string) trainJobOption {
	return func(tj *trainer.TrainJob) {
		var patches []trainer.ReplicatedJobPatch
		for _, rj := range rjs {
			patches = append(patches, trainer.ReplicatedJobPatch{
				Name: rj,
				Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
					Spec: &trainer.PodSpecPatch{NodeSelector: selector},
				}}},
			})
		}
		tj.Spec.RuntimePatches = append(tj.Spec.RuntimePatches, trainer.RuntimePatch{
			Manager: manager,
			TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
				Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: patches},
			}},
		})
	}
}

// rjSummary and summary are the parts of a JobView the tests assert on, in a form
// cmp.Diff prints readably (quantities as canonical strings).
type rjSummary struct {
	Name            string
	Role            Role
	Pods            int32
	Requests        map[string]string
	Limits          map[string]string
	MissingRequests []corev1.ResourceName
	MissingLimits   []corev1.ResourceName
	NodeSelector    map[string]string
}

type summary struct {
	MPI               bool
	MPIImplementation string
	RunLauncherAsNode bool
	NumNodes          int32
	SlotsPerWorker    int32
	GPUsPerWorker     int64
	Hostfile          []string
	ReplicatedJobs    []rjSummary
	TotalPods         int64
	TotalRequests     map[string]string
	TotalLimits       map[string]string
	Problems          []string
}

func strs(list corev1.ResourceList) map[string]string {
	if len(list) == 0 {
		return nil
	}
	out := make(map[string]string, len(list))
	for k, v := range list {
		out[string(k)] = v.String()
	}
	return out
}

func summarize(v *JobView) summary {
	s := summary{
		MPI: v.MPI, MPIImplementation: v.MPIImplementation, RunLauncherAsNode: v.RunLauncherAsNode,
		NumNodes: v.NumNodes, SlotsPerWorker: v.SlotsPerWorker, GPUsPerWorker: v.GPUsPerWorker,
		Hostfile:      v.Hostfile,
		TotalPods:     v.Total.Pods,
		TotalRequests: strs(v.Total.Requests),
		TotalLimits:   strs(v.Total.Limits),
	}
	for _, rj := range v.ReplicatedJobs {
		s.ReplicatedJobs = append(s.ReplicatedJobs, rjSummary{
			Name: rj.Name, Role: rj.Role, Pods: rj.Pods,
			Requests: strs(rj.PerPod.Requests), Limits: strs(rj.PerPod.Limits),
			MissingRequests: rj.PerPod.MissingRequests, MissingLimits: rj.PerPod.MissingLimits,
			NodeSelector: rj.PodTemplate.Spec.NodeSelector,
		})
	}
	for _, p := range v.Problems {
		s.Problems = append(s.Problems, fmt.Sprintf("%s %s", string(p.Type), p.Field))
	}
	sort.Strings(s.Problems)
	return s
}

func hosts(prefix string, n, slots int) []string {
	out := []string{}
	for i := range n {
		out = append(out, fmt.Sprintf("job-%s-0-%d.job slots=%d", prefix, i, slots))
	}
	return out
}

// ancestorOn moves the trainer ancestor label to replicated job rj.
func ancestorOn(rj string) runtimeOption {
	return func(s *trainer.TrainingRuntimeSpec) {
		for i := range s.Template.Spec.ReplicatedJobs {
			delete(s.Template.Spec.ReplicatedJobs[i].Template.Labels, constants.LabelTrainJobAncestor)
		}
		r := replicatedJob(s, rj)
		r.Template.Labels = map[string]string{constants.LabelTrainJobAncestor: constants.AncestorTrainer}
	}
}

// podResources sets pod-level resources on replicated job rj.
func podResources(rj string, requests, limits corev1.ResourceList) runtimeOption {
	return func(s *trainer.TrainingRuntimeSpec) {
		replicatedJob(s, rj).Template.Spec.Template.Spec.Resources = &corev1.ResourceRequirements{Requests: requests, Limits: limits}
	}
}
