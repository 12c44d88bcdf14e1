package follow

import (
	"context"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/diagnosis"
)

// cluster is a fake cluster of one MPI TrainJob "team/t" (a Launcher and 2
// Workers) with the given pods.
func cluster(t *testing.T, pods ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, trainer.AddToScheme, jobsetv1alpha2.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	rt := &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "openmpi"},
		Spec: trainer.TrainingRuntimeSpec{MLPolicy: &trainer.MLPolicy{MLPolicySource: trainer.MLPolicySource{MPI: &trainer.MPIMLPolicySource{}}}}}
	job := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "t", UID: "job-uid", CreationTimestamp: metav1.NewTime(t0)},
		Spec: trainer.TrainJobSpec{RuntimeRef: trainer.RuntimeRef{Name: "openmpi"}}}
	js := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "t"}, Spec: jobsetv1alpha2.JobSetSpec{
		ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{Name: "launcher", Replicas: 1}, {Name: "node", Replicas: 1}}}}
	js.Spec.ReplicatedJobs[1].Template.Spec.Parallelism = ptr.To[int32](2)
	return fake.NewClientBuilder().WithScheme(s).WithObjects(append([]client.Object{rt, job, js}, pods...)...).
		WithIndex(&corev1.Event{}, "involvedObject.uid", func(o client.Object) []string { return []string{string(o.(*corev1.Event).InvolvedObject.UID)} }).
		WithIndex(&corev1.Event{}, "type", func(o client.Object) []string { return []string{o.(*corev1.Event).Type} }).
		Build()
}

func rolePod(role string, index int, opts ...func(*corev1.Pod)) *corev1.Pod {
	name := "t-" + role + "-0-" + string(rune('0'+index)) + "-x"
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID(name), Labels: map[string]string{
		jobsetv1alpha2.JobSetNameKey: "t", jobsetv1alpha2.ReplicatedJobNameKey: role, "batch.kubernetes.io/job-completion-index": string(rune('0' + index))}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Gi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func oomKilled(p *corev1.Pod) {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", RestartCount: 1,
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", FinishedAt: metav1.NewTime(t0)}}}}
}

func unschedulablePod(p *corev1.Pod) {
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: not helpful"}}
}

func follower(c client.Client, now *time.Time) *Reconciler {
	return &Reconciler{client: c, apiReader: c, events: eventWriter{client: c, instance: "test"}, opts: DefaultOptions(),
		now: func() time.Time { return *now }, started: t0.Add(-time.Hour), gpus: newGPULedger(func() time.Time { return *now }), jobs: map[types.NamespacedName]*followed{}}
}

func followerEvents(t *testing.T, c client.Client, reason string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(context.Background(), &list, client.InNamespace("team")); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

var request = ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "t"}}

// TestFailureToldOnce: a Worker's OOMKilled is told once, however often the
// job is reconciled, and not again by a new leader that finds the Event.
func TestFailureToldOnce(t *testing.T) {
	ctx := context.Background()
	now := t0.Add(time.Minute)
	c := cluster(t, rolePod("launcher", 0), rolePod("node", 0), rolePod("node", 1, oomKilled))
	r := follower(c, &now)
	for range 3 {
		if _, err := r.Reconcile(ctx, request); err != nil {
			t.Fatal(err)
		}
	}
	told := followerEvents(t, c, diagnosis.ReasonOOMKilled)
	if len(told) != 1 {
		t.Fatalf("%d OOMKilled Events, want 1: %v", len(told), told)
	}
	const want = "Worker 1 (pod t-node-0-1-x) was OOMKilled: limit 64Gi (container node, exit code 137)"
	if got := told[0].Note; len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("note %q, want it to start with %q", got, want)
	}

	// A new leader sees the Event through the core/v1 view of events, as
	// the apiserver serves an events.k8s.io Event.
	mirror := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "mirror"}, Type: corev1.EventTypeWarning,
		InvolvedObject: corev1.ObjectReference{UID: "job-uid"}, Reason: told[0].Reason, Message: told[0].Note}
	if err := c.Create(ctx, mirror); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if _, err := follower(c, &now).Reconcile(ctx, request); err != nil {
		t.Fatal(err)
	}
	if n := len(followerEvents(t, c, diagnosis.ReasonOOMKilled)); n != 1 {
		t.Errorf("%d OOMKilled Events after a leader change, want 1", n)
	}
}

// TestWaitingToldEveryInterval: a waiting state is told at once, again no
// sooner than the interval later (the same Event's series), and no more once
// the pods run.
func TestWaitingToldEveryInterval(t *testing.T) {
	ctx := context.Background()
	now := t0.Add(time.Second)
	c := cluster(t, rolePod("node", 0), rolePod("node", 1, unschedulablePod))
	r := follower(c, &now)
	occurrences := func() (events int, count int32) {
		for _, e := range followerEvents(t, c, diagnosis.ReasonUnschedulable) {
			events++
			count += max(1, ptr.Deref(e.Series, eventsv1.EventSeries{}).Count)
		}
		return events, count
	}
	step := func(d time.Duration, wantEvents int, wantCount int32) {
		t.Helper()
		now = now.Add(d)
		res, err := r.Reconcile(ctx, request)
		if err != nil {
			t.Fatal(err)
		}
		if events, count := occurrences(); events != wantEvents || count != wantCount {
			t.Errorf("after %s: %d Events counting %d, want %d counting %d", now.Sub(t0), events, count, wantEvents, wantCount)
		}
		if res.RequeueAfter <= 0 || res.RequeueAfter > DefaultOptions().Interval {
			t.Errorf("after %s: requeue after %s, want within the interval", now.Sub(t0), res.RequeueAfter)
		}
	}
	step(0, 0, 0) // a new state: told once it has held Options.Settle
	step(4*time.Second, 0, 0)
	step(time.Second, 1, 1) // settled
	step(10*time.Second, 1, 1)
	step(19*time.Second, 1, 1)
	step(time.Second, 1, 2) // 30 s after the first
	step(29*time.Second, 1, 2)
	step(time.Second, 1, 3)

	// Room: the Worker is scheduled and runs; nothing more is told.
	if err := c.Delete(ctx, rolePod("node", 1)); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, rolePod("node", 1)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		now = now.Add(time.Minute)
		if _, err := r.Reconcile(ctx, request); err != nil {
			t.Fatal(err)
		}
	}
	if events, count := occurrences(); events != 1 || count != 3 {
		t.Errorf("told %d Events counting %d once the pods ran (a Launcher is missing but nothing holds it), want 1 counting 3", events, count)
	}
}

// TestEachFailureItsOwnEvent: two Workers OOMKilled are two Events, written
// in the same instant.
func TestEachFailureItsOwnEvent(t *testing.T) {
	now := t0.Add(time.Minute)
	c := cluster(t, rolePod("launcher", 0), rolePod("node", 0, oomKilled), rolePod("node", 1, oomKilled))
	if _, err := follower(c, &now).Reconcile(context.Background(), request); err != nil {
		t.Fatal(err)
	}
	if n := len(followerEvents(t, c, diagnosis.ReasonOOMKilled)); n != 2 {
		t.Errorf("%d OOMKilled Events for 2 Workers, want 2", n)
	}
}

// TestDeadlineNearToldOnce: the follower comes back when 80% of the job's
// deadline has passed, warns once, and a new leader that finds the Event
// does not warn again.
func TestDeadlineNearToldOnce(t *testing.T) {
	ctx := context.Background()
	c := cluster(t, rolePod("launcher", 0), rolePod("node", 0), rolePod("node", 1))
	var job trainer.TrainJob
	if err := c.Get(ctx, request.NamespacedName, &job); err != nil {
		t.Fatal(err)
	}
	job.Spec.ActiveDeadlineSeconds = 7200
	if err := c.Update(ctx, &job); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Hour)
	r := follower(c, &now)
	res, err := r.Reconcile(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	if want := 36 * time.Minute; res.RequeueAfter != want {
		t.Errorf("requeue after %s, want %s (when 80%% of 2h has passed)", res.RequeueAfter, want)
	}
	if n := len(followerEvents(t, c, diagnosis.ReasonDeadlineNear)); n != 0 {
		t.Fatalf("%d DeadlineNear Events at 50%%, want 0", n)
	}
	now = now.Add(res.RequeueAfter)
	for range 3 {
		if _, err := r.Reconcile(ctx, request); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
	}
	told := followerEvents(t, c, diagnosis.ReasonDeadlineNear)
	if len(told) != 1 || told[0].Type != corev1.EventTypeWarning {
		t.Fatalf("DeadlineNear Events %v, want one Warning", told)
	}
	mirror := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "mirror-near"}, Type: corev1.EventTypeWarning,
		InvolvedObject: corev1.ObjectReference{UID: "job-uid"}, Reason: told[0].Reason, Message: told[0].Note}
	if err := c.Create(ctx, mirror); err != nil {
		t.Fatal(err)
	}
	if _, err := follower(c, &now).Reconcile(ctx, request); err != nil {
		t.Fatal(err)
	}
	if n := len(followerEvents(t, c, diagnosis.ReasonDeadlineNear)); n != 1 {
		t.Errorf("%d DeadlineNear Events after a leader change, want 1", n)
	}
	// An admin raised warnAtPercent to 90 since: the new leader's message
	// says 90%, the Event told 80%; it is the same run's Warning.
	now = t0.Add(time.Hour + 110*time.Minute)
	raised := follower(c, &now)
	raised.opts.Parameter = func(policy, name string) (any, bool) { return float64(90), true }
	if _, err := raised.Reconcile(ctx, request); err != nil {
		t.Fatal(err)
	}
	if n := len(followerEvents(t, c, diagnosis.ReasonDeadlineNear)); n != 1 {
		t.Errorf("%d DeadlineNear Events after a leader change and warnAtPercent 80 -> 90, want 1", n)
	}
}
