package trainjob

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/policies/engine"
	"github.com/mpiguard/mpiguard/policies/render"
)

// view is a JobView with a 1-pod launcher and n worker pods.
func view(workers int32) *render.JobView {
	return &render.JobView{ReplicatedJobs: []render.ReplicatedJobView{
		{Name: "launcher", Role: render.RoleLauncher, Pods: 1},
		{Name: "node", Role: render.RoleWorker, Pods: workers},
	}}
}

func job(name string, mutate ...func(*trainer.TrainJob)) *trainer.TrainJob {
	j := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID("uid-" + name)}}
	for _, m := range mutate {
		m(j)
	}
	return j
}

func pod(jobName, replicatedJob string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: fmt.Sprintf("%s-%s-%d", jobName, replicatedJob, podSeq.Add(1)),
			Labels: map[string]string{jobsetv1alpha2.JobSetNameKey: jobName, jobsetv1alpha2.ReplicatedJobNameKey: replicatedJob}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

var podSeq atomic.Int32

// reservedPods summarises reservations as job -> pods per replicated job.
func reservedPods(rs []engine.Reservation) map[string][]int32 {
	out := map[string][]int32{}
	for _, r := range rs {
		for _, rj := range r.View.ReplicatedJobs {
			out[r.TrainJob] = append(out[r.TrainJob], rj.Pods)
		}
	}
	return out
}

func TestLedgerReserved(t *testing.T) {
	suspended := func(j *trainer.TrainJob) { j.Spec.Suspend = ptr.To(true) }
	complete := func(j *trainer.TrainJob) {
		j.Status.Conditions = []metav1.Condition{{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue}}
	}
	cases := map[string]struct {
		objects  []client.Object
		inflight []string
		want     map[string][]int32
	}{
		"a pending job reserves all its pods": {
			objects: []client.Object{job("a")},
			want:    map[string][]int32{"team-a/a": {1, 3}},
		},
		"suspended and finished jobs reserve nothing": {
			objects: []client.Object{job("s", suspended), job("c", complete)},
			want:    map[string][]int32{},
		},
		"pods that exist are counted by the quota already; finished pods are not": {
			objects: []client.Object{job("a"), pod("a", "launcher", corev1.PodRunning), pod("a", "node", corev1.PodPending), pod("a", "node", corev1.PodSucceeded)},
			want:    map[string][]int32{"team-a/a": {0, 2}},
		},
		"a job whose pods all exist reserves nothing": {
			objects: []client.Object{job("a"), pod("a", "launcher", corev1.PodRunning), pod("a", "node", corev1.PodRunning), pod("a", "node", corev1.PodRunning), pod("a", "node", corev1.PodRunning)},
			want:    map[string][]int32{},
		},
		"the job being decided is not its own reservation": {
			objects: []client.Object{job("self")},
			want:    map[string][]int32{},
		},
		"in-flight admissions count until the cache shows them, once": {
			objects:  []client.Object{job("a")},
			inflight: []string{"a", "b"},
			want:     map[string][]int32{"team-a/a": {1, 3}, "team-a/b": {1, 3}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = clientgoscheme.AddToScheme(scheme)
			_ = trainer.AddToScheme(scheme)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).Build()
			l := NewLedger(c, time.Minute)
			for _, name := range tc.inflight {
				l.Admitted(job(name), view(3))
			}
			got, err := l.Reserved(context.Background(), job("self"), func(context.Context, *trainer.TrainJob) (*render.JobView, error) { return view(3), nil })
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, reservedPods(got)); diff != "" {
				t.Errorf("reservations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLedgerInflightExpires(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = trainer.AddToScheme(scheme)
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	l := NewLedger(c, 30*time.Second)
	now := time.Now()
	l.now = func() time.Time { return now }
	l.Admitted(job("never-created"), view(2))
	now = now.Add(31 * time.Second)
	got, err := l.Reserved(context.Background(), job("self"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("an admission whose TrainJob never appeared still reserves quota after the TTL: %v", reservedPods(got))
	}
}

func TestDenialMessage(t *testing.T) {
	got := denialMessage(job("big"), []engine.Violation{
		{Policy: "aggregate-quota", Field: "spec.trainer", Message: "TrainJob needs 12 nvidia.com/gpu"},
		{Policy: "slots-gpus", Message: "no field"},
	})
	want := "TrainJob team-a/big violates 2 mpiguard policies:\n- [aggregate-quota] spec.trainer: TrainJob needs 12 nvidia.com/gpu\n- [slots-gpus] no field"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}
