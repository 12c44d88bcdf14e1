package render

import (
	cmp2 "cmp"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// objectLine is one Objects as the test reads it.
type objectLine struct {
	Kind, Resource, Creator, ReplicatedJob string
	Count                                  int32
	Names                                  []string
}

func objectLines(objs []Objects) []objectLine {
	out := make([]objectLine, len(objs))
	for i, o := range objs {
		out[i] = objectLine{Kind: o.GVK.GroupKind().String(), Resource: o.GroupResource().String(), Creator: o.Creator, ReplicatedJob: o.ReplicatedJob, Count: o.Count, Names: o.Names}
	}
	return out
}

// TestRenderObjects pins what the Trainer (v2.3) and the JobSet controller
// (v0.12) create for a job besides pods, derived from the rendered JobSet and
// the Trainer's plugins: more replicated jobs or replicas make more Jobs, a
// runtime that turns DNS hostnames off has no Service, a volume claim policy
// adds its PVCs, a gang plugin its PodGroup.
func TestRenderObjects(t *testing.T) {
	trainerObjects := []objectLine{
		{Kind: "ConfigMap", Resource: "configmaps", Creator: CreatorTrainer, Count: 1, Names: []string{"job-runtime-snapshot"}},
		{Kind: "Secret", Resource: "secrets", Creator: CreatorTrainer, Count: 1, Names: []string{"job-mpi-ssh-auth"}},
	}
	hostfile := objectLine{Kind: "ConfigMap", Resource: "configmaps", Creator: CreatorTrainer, Count: 1, Names: []string{"job-mpi-hostfile"}}
	jobSet := objectLine{Kind: "JobSet.jobset.x-k8s.io", Resource: "jobsets.jobset.x-k8s.io", Creator: CreatorTrainer, Count: 1, Names: []string{"job"}}
	service := objectLine{Kind: "Service", Resource: "services", Creator: CreatorJobSet, Count: 1, Names: []string{"job"}}
	jobs := func(rj string, names ...string) objectLine {
		return objectLine{Kind: "Job.batch", Resource: "jobs.batch", Creator: CreatorJobSet, ReplicatedJob: rj, Count: int32(len(names)), Names: names}
	}
	third := func(s *trainer.TrainingRuntimeSpec) {
		s.Template.Spec.ReplicatedJobs = append(s.Template.Spec.ReplicatedJobs, jobsetv1alpha2.ReplicatedJob{
			Name: "metrics", Template: jobTemplate(nil, corev1.Container{Name: "metrics", Image: "busybox"}),
		})
	}
	noDNS := func(s *trainer.TrainingRuntimeSpec) {
		s.Template.Spec.Network = &jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(false)}
	}
	claims := func(s *trainer.TrainingRuntimeSpec) {
		s.Template.Spec.VolumeClaimPolicies = []jobsetv1alpha2.VolumeClaimPolicy{{Templates: []corev1.PersistentVolumeClaim{{}}}}
		s.Template.Spec.VolumeClaimPolicies[0].Templates[0].Name = "scratch"
	}
	gang := func(s *trainer.TrainingRuntimeSpec) {
		s.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{Coscheduling: &trainer.CoschedulingPodGroupPolicySource{ScheduleTimeoutSeconds: ptr.To[int32](60)}}}
	}
	cases := map[string]struct {
		runtime *trainer.ClusterTrainingRuntime
		want    []objectLine
	}{
		"launcher and workers": {
			runtime: mpiRuntime(),
			want:    append(trainerObjects, hostfile, jobSet, service, jobs(constants.Node, "job-node-0"), jobs(constants.Launcher, "job-launcher-0")),
		},
		"three replicated jobs": {
			runtime: mpiRuntime(third),
			want:    append(trainerObjects, hostfile, jobSet, service, jobs(constants.Node, "job-node-0"), jobs(constants.Launcher, "job-launcher-0"), jobs("metrics", "job-metrics-0")),
		},
		"replicas: 2": {
			runtime: mpiRuntime(third, replicas("metrics", 2)),
			want:    append(trainerObjects, hostfile, jobSet, service, jobs(constants.Node, "job-node-0"), jobs(constants.Launcher, "job-launcher-0"), jobs("metrics", "job-metrics-0", "job-metrics-1")),
		},
		"no DNS hostnames, a volume claim policy": {
			runtime: mpiRuntime(noDNS, claims),
			want: append(trainerObjects, hostfile, jobSet,
				objectLine{Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", Creator: CreatorJobSet, Count: 1, Names: []string{"scratch-job"}},
				jobs(constants.Node, "job-node-0"), jobs(constants.Launcher, "job-launcher-0")),
		},
		"coscheduling": {
			runtime: mpiRuntime(gang),
			want: append(trainerObjects, hostfile, jobSet, service, jobs(constants.Node, "job-node-0"), jobs(constants.Launcher, "job-launcher-0"),
				objectLine{Kind: "PodGroup.scheduling.x-k8s.io", Resource: "podgroups.scheduling.x-k8s.io", Creator: CreatorTrainer, Count: 1, Names: []string{"job"}}),
		},
	}
	r := renderer(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := trainJob(numNodes(2))
			if err := ApplyDefaults(tc.runtime, job); err != nil {
				t.Fatal(err)
			}
			view, err := r.Render(context.Background(), Input{TrainJob: job, Runtime: tc.runtime})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff(sortedLines(tc.want), sortedLines(objectLines(view.Objects))); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

// sortedLines orders lines by kind and replicated job: the Trainer's plugins
// run in the order of a map, so what they build comes in any order.
func sortedLines(lines []objectLine) []objectLine {
	out := append([]objectLine(nil), lines...)
	slices.SortStableFunc(out, func(a, b objectLine) int {
		return cmp2.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.ReplicatedJob, b.ReplicatedJob), strings.Compare(strings.Join(a.Names, ","), strings.Join(b.Names, ",")))
	})
	return out
}
