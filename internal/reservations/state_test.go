package reservations

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// podsView renders every job as a launcher and `node` replicated job of
// pods pods each, charged one pod apiece.
func podsView(launcher, workers int32) *render.JobView {
	part := func(name string, n int32) render.ReplicatedJobView {
		return render.ReplicatedJobView{Name: name, Pods: n, PerPod: render.Charge{Pods: 1}}
	}
	return &render.JobView{ReplicatedJobs: []render.ReplicatedJobView{part("launcher", launcher), part("node", workers)}}
}

func stateJob(name string, suspend bool) *trainer.TrainJob {
	return &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}, Spec: trainer.TrainJobSpec{Suspend: ptr.To(suspend)}}
}

func TestReadState(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, trainer.AddToScheme, jobsetv1alpha2.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	quotaQ := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "q"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("20")}},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{"pods": resource.MustParse("20")},
			Used: corev1.ResourceList{"pods": resource.MustParse("2")},
		},
	}
	res := &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Namespace: "team-a", Entries: []v1alpha1.ReservationEntry{entry("reserved", 3)}}}
	objects := []client.Object{
		quotaQ,
		stateJob("reserved", false),   // its entry holds it: not rendered again
		stateJob("unreserved", false), // starts pods without an entry: rendered, held
		stateJob("half-started", false),
		stateJob("suspended", true), // starts nothing
	}
	js := jobSetOf("half-started", "")
	objects = append(objects, &jobsetv1alpha2.JobSet{ObjectMeta: js.ObjectMeta})
	for i, rj := range []string{"launcher", "node"} {
		p := pod(i, "half-started", rj, corev1.PodRunning)
		p.Namespace = "team-a"
		objects = append(objects, &p)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	var rendered []string
	renderStored := func(_ context.Context, job *trainer.TrainJob) (*render.JobView, error) {
		rendered = append(rendered, job.Name)
		return podsView(1, 2), nil
	}

	state, _, err := ReadState(context.Background(), c, c, "team-a", res, renderStored, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int32{
		"team-a/reserved":     {1, 3}, // the entry, no pod exists
		"team-a/unreserved":   {1, 2}, // rendered: nothing of it exists
		"team-a/half-started": {1},    // one Worker of two exists; the launcher runs
	}
	if d := cmp.Diff(want, heldPods(state.Reservations)); d != "" {
		t.Errorf("holders (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"half-started", "unreserved"}, rendered); d != "" {
		t.Errorf("rendered (-want +got): only jobs that start pods without an entry\n%s", d)
	}
	if len(state.Quotas) != 1 || state.Quotas[0].Status.Used.Pods().Value() != 2 {
		t.Errorf("quotas: want q with status.used as stored, got %+v", state.Quotas)
	}

	t.Run("a job that cannot be rendered fails the read, naming it", func(t *testing.T) {
		_, _, err := ReadState(context.Background(), c, c, "team-a", res, func(context.Context, *trainer.TrainJob) (*render.JobView, error) {
			return nil, errors.New("runtime broken")
		}, false)
		if err == nil || !strings.Contains(err.Error(), `TrainJob half-started, which holds quota in "team-a": runtime broken`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("a job whose runtime is gone holds nothing", func(t *testing.T) {
		state, _, err := ReadState(context.Background(), c, c, "team-a", res, func(context.Context, *trainer.TrainJob) (*render.JobView, error) {
			return nil, nil
		}, false)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(map[string][]int32{"team-a/reserved": {1, 3}}, heldPods(state.Reservations)); d != "" {
			t.Errorf("holders (-want +got):\n%s", d)
		}
	})
}

// A quota is decided against only once the quota controller counts what it
// limits of pods: status.hard equal to spec.hard and status.used present.
func TestSynced(t *testing.T) {
	list := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	q := func(hard, statusHard, used corev1.ResourceList) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "q"},
			Spec:       corev1.ResourceQuotaSpec{Hard: hard},
			Status:     corev1.ResourceQuotaStatus{Hard: statusHard, Used: used},
		}
	}
	gpu := "requests.nvidia.com/gpu"
	cases := map[string]struct {
		q     *corev1.ResourceQuota
		stale []string
	}{
		"synced":                     {q(list(gpu, "16"), list(gpu, "16"), list(gpu, "0")), nil},
		"no status (just created)":   {q(list(gpu, "16"), nil, nil), []string{gpu}},
		"spec changed since":         {q(list(gpu, "16"), list(gpu, "8"), list(gpu, "0")), []string{gpu}},
		"a name added, not counted":  {q(list(gpu, "16", "pods", "4"), list(gpu, "16"), list(gpu, "0")), []string{"pods"}},
		"used not counted yet":       {q(list(gpu, "16"), list(gpu, "16"), nil), []string{gpu}},
		"names jobs never charge":    {q(list("services.loadbalancers", "4"), nil, nil), nil},
		"an object count not synced": {q(list("count/configmaps", "4"), nil, nil), []string{"count/configmaps"}},
		"equal amounts, other units": {q(list("requests.memory", "1Gi"), list("requests.memory", "1024Mi"), list("requests.memory", "0")), nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := synced(tc.q)
			var got []string
			var ns *NotSyncedError
			if errors.As(err, &ns) {
				got = ns.Resources
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			if d := cmp.Diff(tc.stale, got); d != "" {
				t.Errorf("stale names (-want +got):\n%s", d)
			}
			if err != nil && !strings.Contains(err.Error(), "ResourceQuota team-a/q is not synced yet") {
				t.Errorf("message %q does not name the quota", err)
			}
		})
	}
}

func TestWithUncounted(t *testing.T) {
	quotas := []corev1.ResourceQuota{
		usedQuota("q", list("requests.nvidia.com/gpu", "16"), list("requests.nvidia.com/gpu", "4", "pods", "2")),
		usedQuota("other", list("pods", "10"), nil),
	}
	res := &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Uncounted: []v1alpha1.UncountedUsage{
		{ResourceQuota: "q", Usage: list("requests.nvidia.com/gpu", "4", "pods", "1")},
		{ResourceQuota: "gone", Usage: list("pods", "1")},
		{ResourceQuota: "other", Usage: list("pods", "1")},
	}}}
	added := withUncounted(quotas, res)
	if diff := cmp.Diff(input.Uncounted{"q": res.Spec.Uncounted[0].Usage, "other": res.Spec.Uncounted[2].Usage}, added); diff != "" {
		t.Errorf("what was added, by quota (-want +got):\n%s", diff)
	}
	got := map[string]string{}
	for _, q := range quotas {
		for name, v := range q.Status.Used {
			got[q.Name+" "+string(name)] = v.String()
		}
	}
	want := map[string]string{"q requests.nvidia.com/gpu": "8", "q pods": "3", "other pods": "1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status.used (-want +got):\n%s", diff)
	}
}

// The quotas of these tests.
var (
	usedQuota = fixtures.UsedQuota
	list      = fixtures.ResourceList
)
