package gang_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/mpiguard/mpiguard/internal/gang"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

var (
	rendererOnce sync.Once
	testRenderer *render.Renderer
	rendererErr  error
)

// view renders job on rt with the Trainer's own framework, as admission does.
func view(t *testing.T, rt *trainer.ClusterTrainingRuntime, job *trainer.TrainJob) *render.JobView {
	t.Helper()
	rendererOnce.Do(func() { testRenderer, rendererErr = render.NewRenderer(context.Background()) })
	if rendererErr != nil {
		t.Fatal(rendererErr)
	}
	if err := render.ApplyDefaults(job, rt); err != nil {
		t.Fatal(err)
	}
	v, err := testRenderer.Render(context.Background(), render.Input{TrainJob: job, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func queue(name, parent string, state volcanov1beta1.QueueState, capability, allocated corev1.ResourceList) volcanov1beta1.Queue {
	return volcanov1beta1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       volcanov1beta1.QueueSpec{Parent: parent, Capability: capability},
		Status:     volcanov1beta1.QueueStatus{State: state, Allocated: allocated},
	}
}

func gpus(need, capacity, allocated string) gang.CapacityInput {
	n := func(s string) json.Number { return json.Number(s + "000") }
	if allocated == "0" {
		return gang.CapacityInput{Resource: "nvidia.com/gpu", Milli: n(need), Display: need, Capability: n(capacity), CapabilityDisplay: capacity, Allocated: "0", AllocatedDisplay: "0"}
	}
	return gang.CapacityInput{Resource: "nvidia.com/gpu", Milli: n(need), Display: need, Capability: n(capacity), CapabilityDisplay: capacity, Allocated: n(allocated), AllocatedDisplay: allocated}
}

func TestInputOf(t *testing.T) {
	gpu := func(s string) corev1.ResourceList { return fixtures.ResourceList("nvidia.com/gpu", s) }
	// 3 Workers of 4 GPUs, 4 CPUs, 8Gi (requests) and a launcher of 1 CPU, 1Gi:
	// 4 pods, 12 GPUs, 13 CPUs, 25Gi.
	volcanoJob := func(queue string) (*trainer.ClusterTrainingRuntime, *trainer.TrainJob) {
		return fixtures.VolcanoRuntime("v", "4", queue).Cluster(), fixtures.TrainJob("team-a", "j", "v").NumNodes(3).Obj()
	}
	volcanoView := func(t *testing.T, queue string) *render.JobView {
		rt, job := volcanoJob(queue)
		return view(t, rt, job)
	}
	minResources := map[string]gang.Amount{
		"cpu":            {Milli: "13000", Display: "13"},
		"memory":         {Milli: "26843545600000", Display: "25Gi"},
		"nvidia.com/gpu": {Milli: "12000", Display: "12"},
	}
	hierarchy := &gang.Queues{Served: true, Items: []volcanov1beta1.Queue{
		queue("root", "", volcanov1beta1.QueueStateOpen, nil, nil),
		queue("eng", "root", volcanov1beta1.QueueStateOpen, gpu("8"), gpu("2")),
		queue("team-a", "eng", volcanov1beta1.QueueStateOpen, gpu("32"), nil),
		queue("team-b", "eng", volcanov1beta1.QueueStateClosed, nil, nil),
	}}
	cases := []struct {
		name   string
		view   func(t *testing.T) *render.JobView
		queues *gang.Queues
		want   *gang.Input
	}{{
		name:   "the queue and its ancestors, leaf first, each with its capped resources",
		view:   func(t *testing.T) *render.JobView { return volcanoView(t, "team-a") },
		queues: hierarchy,
		want: &gang.Input{Scheduler: "volcano", MinMember: 4, MinResources: minResources, Volcano: &gang.VolcanoInput{
			Served: true, Queue: "team-a", Annotated: true, Queues: []gang.QueueInput{
				{Name: "team-a", Exists: true, State: "Open", Parent: "eng", Children: []string{}, Capability: []gang.CapacityInput{gpus("12", "32", "0")}},
				{Name: "eng", Exists: true, State: "Open", Parent: "root", Children: []string{"team-a", "team-b"}, Capability: []gang.CapacityInput{gpus("12", "8", "2")}},
				{Name: "root", Exists: true, State: "Open", Children: []string{"eng"}, Capability: []gang.CapacityInput{}},
			},
		}},
	}, {
		name:   "a queue that does not exist",
		view:   func(t *testing.T) *render.JobView { return volcanoView(t, "research") },
		queues: hierarchy,
		want: &gang.Input{Scheduler: "volcano", MinMember: 4, MinResources: minResources, Volcano: &gang.VolcanoInput{
			Served: true, Queue: "research", Annotated: true, Queues: []gang.QueueInput{{Name: "research", Children: []string{}, Capability: []gang.CapacityInput{}}},
		}},
	}, {
		name:   "no Volcano served",
		view:   func(t *testing.T) *render.JobView { return volcanoView(t, "team-a") },
		queues: &gang.Queues{},
		want: &gang.Input{Scheduler: "volcano", MinMember: 4, MinResources: minResources, Volcano: &gang.VolcanoInput{
			Queue: "team-a", Annotated: true, Queues: []gang.QueueInput{},
		}},
	}, {
		name: "no annotation: Volcano's default queue; a runtime patch's annotation wins over the runtime's",
		view: func(t *testing.T) *render.JobView {
			rt, job := volcanoJob("team-a")
			delete(rt.Spec.Template.Annotations, volcanov1beta1.QueueNameAnnotationKey)
			v := view(t, rt, job)
			if v.Gang.Queue != "" {
				t.Errorf("queue %q without an annotation, want none", v.Gang.Queue)
			}
			rt, job = volcanoJob("team-a")
			job.Spec.RuntimePatches = []trainer.RuntimePatch{{Manager: "example.com/queues", TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{
				Template: &trainer.JobSetTemplatePatch{Metadata: &metav1.ObjectMeta{Annotations: map[string]string{volcanov1beta1.QueueNameAnnotationKey: "team-b"}}},
			}}}
			if got := view(t, rt, job).Gang.Queue; got != "team-b" {
				t.Errorf("queue %q with a runtime patch naming team-b", got)
			}
			return v
		},
		queues: &gang.Queues{Served: true},
		want: &gang.Input{Scheduler: "volcano", MinMember: 4, MinResources: minResources, Volcano: &gang.VolcanoInput{
			Served: true, Queue: "default", Queues: []gang.QueueInput{{Name: "default", Children: []string{}, Capability: []gang.CapacityInput{}}},
		}},
	}, {
		name: "GPUs as limits only: not in the PodGroup's minResources, still what the pods need",
		view: func(t *testing.T) *render.JobView {
			rt := fixtures.VolcanoRuntime("v", "4", "team-a").Resources("node", nil, nil).Cluster()
			job := fixtures.TrainJob("team-a", "j", "v").NumNodes(3).Obj()
			job.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{Limits: gpu("4")}
			return view(t, rt, job)
		},
		queues: &gang.Queues{Served: true, Items: []volcanov1beta1.Queue{queue("team-a", "", volcanov1beta1.QueueStateOpen, gpu("8"), nil)}},
		want: &gang.Input{Scheduler: "volcano", MinMember: 4, MinResources: map[string]gang.Amount{"cpu": {Milli: "1000", Display: "1"}, "memory": {Milli: "1073741824000", Display: "1Gi"}}, Volcano: &gang.VolcanoInput{
			Served: true, Queue: "team-a", Annotated: true, Queues: []gang.QueueInput{
				{Name: "team-a", Exists: true, State: "Open", Children: []string{}, Capability: []gang.CapacityInput{gpus("12", "8", "0")}},
			},
		}},
	}, {
		name: "a cycle of parents ends the chain",
		view: func(t *testing.T) *render.JobView { return volcanoView(t, "a") },
		queues: &gang.Queues{Served: true, Items: []volcanov1beta1.Queue{
			queue("a", "b", volcanov1beta1.QueueStateOpen, nil, nil), queue("b", "a", volcanov1beta1.QueueStateOpen, nil, nil),
		}},
		want: &gang.Input{Scheduler: "volcano", MinMember: 4, MinResources: minResources, Volcano: &gang.VolcanoInput{
			Served: true, Queue: "a", Annotated: true, Queues: []gang.QueueInput{
				{Name: "a", Exists: true, State: "Open", Parent: "b", Children: []string{"b"}, Capability: []gang.CapacityInput{}},
				{Name: "b", Exists: true, State: "Open", Parent: "a", Children: []string{"a"}, Capability: []gang.CapacityInput{}},
			},
		}},
	}, {
		name: "coscheduling: the timeout, no queue",
		view: func(t *testing.T) *render.JobView {
			return view(t, fixtures.CoschedulingRuntime("c", "4", 0).Cluster(), fixtures.TrainJob("team-a", "j", "c").NumNodes(3).Obj())
		},
		want: &gang.Input{Scheduler: "coscheduling", MinMember: 4, MinResources: minResources, ScheduleTimeoutSeconds: ptr.To[int32](0)},
	}, {
		name: "no podGroupPolicy: no gang",
		view: func(t *testing.T) *render.JobView {
			return view(t, fixtures.GPUWorkersRuntime("p", "4").Cluster(), fixtures.TrainJob("team-a", "j", "p").NumNodes(3).Obj())
		},
		queues: hierarchy,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, gang.InputOf(tc.view(t), tc.queues)); diff != "" {
				t.Errorf("InputOf (-want +got):\n%s", diff)
			}
		})
	}
}
