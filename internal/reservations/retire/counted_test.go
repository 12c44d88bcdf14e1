package retire

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
)

// gpuPod is a running pod of TrainJob job's replicated job in team-a,
// requesting gpus GPUs and 1 CPU (requests and limits), of priority class pc.
func gpuPod(i int, job, replicatedJob, gpus, pc string) corev1.Pod {
	p := pod(i, job, replicatedJob, corev1.PodRunning)
	p.Namespace, p.UID = "team-a", types.UID("uid-"+p.Name)
	res := corev1.ResourceList{"cpu": resource.MustParse("1")}
	if gpus != "" {
		res["nvidia.com/gpu"] = resource.MustParse(gpus)
	}
	p.Spec = corev1.PodSpec{PriorityClassName: pc, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}}
	return p
}

func TestShortfalls(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	job := []corev1.Pod{gpuPod(0, "first", "launcher", "", ""), gpuPod(0, "first", "node", "4", ""), gpuPod(1, "first", "node", "4", "")}
	finished := gpuPod(2, "first", "node", "4", "")
	finished.Status.Phase = corev1.PodSucceeded
	training := []corev1.Pod{gpuPod(0, "tr", "node", "4", "training"), gpuPod(1, "tr", "node", "4", "training")}
	scoped := func(q corev1.ResourceQuota) corev1.ResourceQuota {
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"training"}}}}
		return q
	}
	cases := []struct {
		name   string
		quotas []corev1.ResourceQuota
		pods   []corev1.Pod
		want   []string
	}{{
		name:   "the status counts every pod",
		quotas: []corev1.ResourceQuota{usedQuota("q", list("requests.nvidia.com/gpu", "16", "pods", "10"), list("requests.nvidia.com/gpu", "8", "pods", "3"))},
		pods:   job,
	}, {
		name:   "a recompute missed a Worker",
		quotas: []corev1.ResourceQuota{usedQuota("q", list("requests.nvidia.com/gpu", "16", "pods", "10"), list("requests.nvidia.com/gpu", "4", "pods", "2"))},
		pods:   job,
		want: []string{
			"ResourceQuota team-a/q counts 2 of pods in status.used where the pods that exist charge 3",
			"ResourceQuota team-a/q counts 4 of requests.nvidia.com/gpu in status.used where the pods that exist charge 8",
		},
	}, {
		name:   "a finished pod charges nothing; a status not yet giving it back counts more",
		quotas: []corev1.ResourceQuota{usedQuota("q", list("requests.nvidia.com/gpu", "16"), list("requests.nvidia.com/gpu", "12"))},
		pods:   append(job[1:], finished),
	}, {
		name: "every name pods are charged for, in any spelling; object counts are not compared",
		quotas: []corev1.ResourceQuota{usedQuota("q",
			list("cpu", "10", "requests.cpu", "10", "limits.cpu", "10", "count/pods", "10", "count/secrets", "10"),
			list("cpu", "3", "requests.cpu", "2", "limits.cpu", "3", "count/pods", "3", "count/secrets", "0"))},
		pods: job,
		want: []string{"ResourceQuota team-a/q counts 2 of requests.cpu in status.used where the pods that exist charge 3"},
	}, {
		name: "a scoped quota counts the pods it selects only",
		quotas: []corev1.ResourceQuota{
			scoped(usedQuota("training", list("requests.nvidia.com/gpu", "16"), list("requests.nvidia.com/gpu", "4"))),
			usedQuota("all", list("requests.nvidia.com/gpu", "32"), list("requests.nvidia.com/gpu", "16")),
		},
		pods: append(append([]corev1.Pod{}, job...), training...),
		want: []string{"ResourceQuota team-a/training counts 4 of requests.nvidia.com/gpu in status.used where the pods that exist charge 8"},
	}, {
		name:   "a used name missing counts as none",
		quotas: []corev1.ResourceQuota{usedQuota("q", list("requests.nvidia.com/gpu", "16"), nil)},
		pods:   job,
		want:   []string{"ResourceQuota team-a/q counts 0 of requests.nvidia.com/gpu in status.used where the pods that exist charge 8"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range Shortfalls(tc.quotas, tc.pods, now) {
				got = append(got, s.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Shortfalls (-want +got):\n%s", diff)
			}
		})
	}
}

// The leader compares the quota with the pods live on its first reconcile
// of the namespace, when a count may have been recomputed, before it
// releases an entry whose pods exist (settle after it first saw them), and
// while a difference is recorded: a quota controller's recompute that
// missed the job's pods is recorded in spec.uncounted (admission adds it to
// status.used), kept after the entry goes, removed once the quota counts
// the pods, or dropped after behindTrust.
func TestRetirerRecordsWhatTheQuotaDoesNotCount(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	key := client.ObjectKey{Namespace: "mpiguard-system", Name: "team-a"}
	setup := func(t *testing.T) (*Reconciler, client.Client, *events.FakeRecorder, *time.Time) {
		res := &v1alpha1.QuotaReservation{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Spec:       v1alpha1.QuotaReservationSpec{Namespace: "team-a", Entries: []v1alpha1.ReservationEntry{entry("first", 2)}},
		}
		js := jobSetOf("first", "")
		q := usedQuota("q", list("requests.nvidia.com/gpu", "16"), list("requests.nvidia.com/gpu", "4"))
		objs := []client.Object{res, &q,
			&trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "first"}},
			&jobsetv1alpha2.JobSet{ObjectMeta: js.ObjectMeta},
		}
		for _, p := range []corev1.Pod{gpuPod(0, "first", "launcher", "", ""), gpuPod(0, "first", "node", "4", ""), gpuPod(1, "first", "node", "4", "")} {
			objs = append(objs, &p)
		}
		c := fake.NewClientBuilder().WithScheme(retirerScheme(t)).WithObjects(objs...).Build()
		now := start
		recorder := events.NewFakeRecorder(10)
		r := &Reconciler{client: c, live: c, recorder: recorder, namespace: key.Namespace,
			now: func() time.Time { return now }, deleted: lru.New(deletedJobs), podsSeen: lru.New(deletedJobs)}
		return r, c, recorder, &now
	}
	reconcileAt := func(t *testing.T, r *Reconciler) reconcile.Result {
		t.Helper()
		got, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		return got
	}
	// stored is the object's entries and record, "gone" when deleted.
	stored := func(t *testing.T, c client.Client) string {
		t.Helper()
		var res v1alpha1.QuotaReservation
		if err := c.Get(ctx, key, &res); err != nil {
			return "gone"
		}
		var out []string
		for _, e := range res.Spec.Entries {
			out = append(out, "entry "+e.TrainJob)
		}
		for _, u := range res.Spec.Uncounted {
			for name, q := range u.Usage {
				out = append(out, fmt.Sprintf("uncounted %s %s %s since %s", u.ResourceQuota, name, q.String(), u.Since.UTC().Format(time.TimeOnly)))
			}
		}
		return strings.Join(out, "; ")
	}
	nextEvent := func(t *testing.T, recorder *events.FakeRecorder) string {
		t.Helper()
		select {
		case e := <-recorder.Events:
			return e
		default:
			t.Fatal("no event recorded")
			return ""
		}
	}
	count := func(t *testing.T, c client.Client, gpus string) {
		t.Helper()
		var q corev1.ResourceQuota
		if err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "q"}, &q); err != nil {
			t.Fatal(err)
		}
		q.Status.Used = list("requests.nvidia.com/gpu", gpus)
		if err := c.Update(ctx, &q); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("recorded while the quota counts 4 of the 8 GPUs, removed once it counts 8", func(t *testing.T) {
		r, c, recorder, now := setup(t)
		got := reconcileAt(t, r)
		if want := "entry first; uncounted q requests.nvidia.com/gpu 4 since 09:00:00"; stored(t, c) != want || got.RequeueAfter != settle+100*time.Millisecond {
			t.Fatalf("first reconcile: %q, requeue %v; want %q, requeue after %v", stored(t, c), got.RequeueAfter, want, settle)
		}
		if got := testutil.ToFloat64(statusBehind.WithLabelValues("team-a")); got != 1 {
			t.Errorf("mpiguard_quota_status_behind{namespace=team-a} %v, want 1", got)
		}
		want := "Warning QuotaStatusBehind ResourceQuota team-a/q counts 4 of requests.nvidia.com/gpu in status.used where the pods that exist charge 8: its controller's last count missed pods created meanwhile; mpiguard counts the difference as used until it counts those pods (at most 6m0s)"
		if got := nextEvent(t, recorder); !strings.HasPrefix(got, want) {
			t.Errorf("event:\n got %s\nwant %s", got, want)
		}
		*now = start.Add(settle)
		if got := reconcileAt(t, r); stored(t, c) != "uncounted q requests.nvidia.com/gpu 4 since 09:00:00" || got.RequeueAfter != behindRecheck+100*time.Millisecond {
			t.Fatalf("after settle: %q, requeue %v; want the entry released, the record kept, requeue after %v", stored(t, c), got.RequeueAfter, behindRecheck)
		}
		if got := nextEvent(t, recorder); !strings.Contains(got, "Normal PodsCreated") {
			t.Errorf("event %q, want PodsCreated", got)
		}
		if len(recorder.Events) != 0 {
			t.Errorf("the same shortfall reported again: %s", <-recorder.Events)
		}
		count(t, c, "8")
		reconcileAt(t, r)
		if got := stored(t, c); got != "gone" {
			t.Fatalf("the quota counts the pods: %q, want the object deleted", got)
		}
		if got := testutil.ToFloat64(statusBehind.WithLabelValues("team-a")); got != 0 {
			t.Errorf("mpiguard_quota_status_behind{namespace=team-a} %v, want 0", got)
		}
	})

	t.Run("compared when the quota's count goes down, not on every reconcile", func(t *testing.T) {
		r, c, recorder, _ := setup(t)
		count(t, c, "8")
		reconcileAt(t, r) // the first of the namespace: compared, nothing short
		var before corev1.ResourceQuota
		if err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "q"}, &before); err != nil {
			t.Fatal(err)
		}
		count(t, c, "4")
		reconcileAt(t, r)
		if got := stored(t, c); got != "entry first" {
			t.Fatalf("no recompute seen: %q, want nothing compared", got)
		}
		var after corev1.ResourceQuota
		if err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "q"}, &after); err != nil {
			t.Fatal(err)
		}
		queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer queue.ShutDown()
		r.quotaEvents().Update(ctx, event.UpdateEvent{ObjectOld: &before, ObjectNew: &after}, queue)
		if queue.Len() != 1 {
			t.Fatalf("the recompute queued %d reconciles, want 1", queue.Len())
		}
		reconcileAt(t, r)
		if got := stored(t, c); got != "entry first; uncounted q requests.nvidia.com/gpu 4 since 09:00:00" {
			t.Fatalf("after the recompute: %q", got)
		}
		if got := nextEvent(t, recorder); !strings.Contains(got, "QuotaStatusBehind") {
			t.Errorf("event %q, want QuotaStatusBehind", got)
		}
	})

	t.Run("dropped after behindTrust when the quota never counts them", func(t *testing.T) {
		r, c, recorder, now := setup(t)
		reconcileAt(t, r)
		nextEvent(t, recorder)
		*now = start.Add(behindTrust - time.Second)
		reconcileAt(t, r)
		if got := stored(t, c); got != "uncounted q requests.nvidia.com/gpu 4 since 09:00:00" {
			t.Fatalf("before behindTrust: %q", got)
		}
		if got := nextEvent(t, recorder); !strings.Contains(got, "Normal PodsCreated") {
			t.Errorf("event %q, want PodsCreated", got)
		}
		*now = start.Add(behindTrust)
		reconcileAt(t, r)
		if got := stored(t, c); got != "gone" {
			t.Fatalf("after behindTrust: %q, want the record dropped", got)
		}
		if got := nextEvent(t, recorder); !strings.Contains(got, "still so after 6m0s: mpiguard no longer counts the difference") {
			t.Errorf("event %q, want the record dropped despite the shortfall", got)
		}
	})
}

func TestRecounted(t *testing.T) {
	q := func(used corev1.ResourceList) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{Status: corev1.ResourceQuotaStatus{Used: used}}
	}
	cases := []struct {
		name      string
		old, cur  corev1.ResourceList
		recounted bool
	}{
		{"the apiserver charged a pod", list("requests.nvidia.com/gpu", "4"), list("requests.nvidia.com/gpu", "8"), false},
		{"a recompute went down", list("requests.nvidia.com/gpu", "8"), list("requests.nvidia.com/gpu", "4"), true},
		{"a first count", nil, list("requests.nvidia.com/gpu", "4"), true},
		{"an object count went down", list("count/secrets", "4", "pods", "2"), list("count/secrets", "3", "pods", "2"), false},
		{"unchanged", list("pods", "2"), list("pods", "2"), false},
	}
	for _, tc := range cases {
		if got := recounted(q(tc.old), q(tc.cur)); got != tc.recounted {
			t.Errorf("%s: recounted %v, want %v", tc.name, got, tc.recounted)
		}
	}
}

// Admission reads a quota as counting what the leader found its status
// lacks; a record of a quota deleted since changes nothing.
// A pod that finished between the two lists may already have been given
// back by the quota, and one created between them may not be in the quota
// read before: neither counts when a shortfall is confirmed.
func TestChargedInBoth(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	running, finishing, created := gpuPod(0, "a", "node", "4", ""), gpuPod(1, "a", "node", "4", ""), gpuPod(2, "a", "node", "4", "")
	finished := finishing
	finished.Status.Phase = corev1.PodSucceeded
	var got []string
	for _, p := range chargedInBoth([]corev1.Pod{running, finishing}, []corev1.Pod{running, finished, created}, now) {
		got = append(got, p.Name)
	}
	if diff := cmp.Diff([]string{"a-node-0"}, got); diff != "" {
		t.Errorf("chargedInBoth (-want +got):\n%s", diff)
	}
}
