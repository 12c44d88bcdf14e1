package engine

import (
	"context"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/mpiguard/mpiguard/internal/gang"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// FuzzGangDecide runs the validating pass of gang-scheduled jobs with the
// embedded policies over what admins and users set for gangs: the job's size
// and GPUs (as requests, or as limits only, which the PodGroup's
// minResources leaves out), the scheduler (Volcano or coscheduling) and its
// timeout, the queue annotation, and up to three Volcano Queues (names,
// parents, cycles included, states, capabilities and allocated amounts of
// any size), or none served. For every input that renders: no panic, no
// evaluation error, and a consistent decision whose violations name their
// policy and say something.
func FuzzGangDecide(f *testing.F) {
	f.Add(int32(3), "4", false, true, int32(120), "team-a", true, "team-a", "", "Open", "16", "8", "", "", "", "", "", "", "", "", "", false)
	f.Add(int32(4), "4", true, true, int32(0), "", true, "default", "", "Closed", "8", "0", "eng", "", "Open", "1E", "999999999999999999999", "x", "eng", "1m", "", true)
	f.Add(int32(1), "1P", false, false, int32(0), "root", false, "root", "a", "", "-1", "2", "a", "root", "Unknown", "0", "", "", "", "", "", false)
	f.Fuzz(func(t *testing.T, nodes int32, gpus string, limitsOnly, volcano bool, timeout int32, annotation string, served bool,
		q1, p1, s1, c1, a1, q2, p2, s2, c2, a2, q3, p3, c3, a3 string, update bool) {
		perNode, ok := quantityList(map[corev1.ResourceName]string{"nvidia.com/gpu": gpus}, false)
		if !ok {
			return
		}
		rb := fixtures.MPIRuntime("gang").RunLauncherAsNode(true)
		scheduler := "scheduler-plugins-scheduler"
		if volcano {
			scheduler = "volcano"
			rb.PodGroupPolicy(trainer.PodGroupPolicySource{Volcano: &trainer.VolcanoPodGroupPolicySource{}})
			if annotation != "" {
				rb.TemplateAnnotation(volcanov1beta1.QueueNameAnnotationKey, annotation)
			}
		} else {
			rb.PodGroupPolicy(trainer.PodGroupPolicySource{Coscheduling: &trainer.CoschedulingPodGroupPolicySource{ScheduleTimeoutSeconds: ptr.To(timeout)}})
		}
		rb.PodSpec("launcher").SchedulerName, rb.PodSpec("node").SchedulerName = scheduler, scheduler
		rt := rb.Cluster()
		tj := fixtures.TrainJob("team-a", "job", "gang").NumNodes(nodes).Obj()
		tj.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{Limits: perNode}
		if !limitsOnly {
			tj.Spec.Trainer.ResourcesPerNode.Requests = perNode
		}
		if err := render.ApplyDefaults(tj, rt); err != nil {
			t.Fatalf("ApplyDefaults: %v", err)
		}
		e, r := fuzzEngine(t)
		ctx := context.Background()
		view, err := r.Render(ctx, render.Input{TrainJob: tj, Runtime: rt, OwnManager: AdmissionManager})
		if err != nil {
			return
		}
		if view.Gang == nil {
			t.Fatal("a runtime with a podGroupPolicy renders no gang")
		}
		queues := &gang.Queues{Served: served}
		for _, q := range [][4]string{{q1, p1, s1, c1 + "|" + a1}, {q2, p2, s2, c2 + "|" + a2}, {q3, p3, "Open", c3 + "|" + a3}} {
			if q[0] == "" {
				continue
			}
			capacity, allocated, _ := strings.Cut(q[3], "|")
			c, ok1 := quantityList(map[corev1.ResourceName]string{"nvidia.com/gpu": capacity}, false)
			a, ok2 := quantityList(map[corev1.ResourceName]string{"nvidia.com/gpu": allocated}, false)
			if !ok1 || !ok2 {
				return
			}
			queues.Items = append(queues.Items, volcanov1beta1.Queue{
				ObjectMeta: metav1.ObjectMeta{Name: q[0]},
				Spec:       volcanov1beta1.QueueSpec{Parent: q[1], Capability: c},
				Status:     volcanov1beta1.QueueStatus{State: volcanov1beta1.QueueState(q[2]), Allocated: a},
			})
		}
		req := &input.Source{
			Operation: Create, User: "alice", TrainJob: tj, View: view,
			Namespace:     &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			Runtime:       input.RuntimeMeta{Kind: trainer.ClusterTrainingRuntimeKind, Name: rt.Name},
			VolcanoQueues: queues,
		}
		if update {
			req.Operation, req.OldTrainJob = Update, tj.DeepCopy()
			req.OldTrainJob.Spec.Suspend = ptr.To(true)
		}
		d, err := e.Decide(ctx, request(req))
		if err != nil {
			t.Fatalf("validating pass: %v", err)
		}
		if d.Allowed != (len(d.Denials()) == 0) {
			t.Fatalf("allowed %t with denials %v", d.Allowed, d.Denials())
		}
		for _, v := range d.Violations {
			if v.Policy == "" || v.Message == "" {
				t.Fatalf("violation without a policy or message: %+v", v)
			}
		}
	})
}
