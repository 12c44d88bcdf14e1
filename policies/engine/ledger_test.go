package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/policies/render"
)

// gpuView is a job of workers x 4 GPUs with a GPU-less launcher.
func gpuView(workers int32) *render.JobView {
	four := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}
	return &render.JobView{
		MPI: true, NumNodes: workers, SlotsPerWorker: 4, GPUsPerWorker: 4,
		ReplicatedJobs: []render.ReplicatedJobView{
			{Name: "launcher", Role: render.RoleLauncher, Pods: 1, PerPod: render.Charge{Pods: 1}},
			{Name: "node", Role: render.RoleWorker, Pods: workers, PerPod: render.Charge{Pods: 1, Requests: four, Limits: four}},
		},
	}
}

// TestConcurrentSubmitsCannotOvershootQuota: 40 parallel submits of 1-worker
// 4-GPU jobs into a 40-GPU quota (launchers take none): exactly 10 admitted.
func TestConcurrentSubmitsCannotOvershootQuota(t *testing.T) {
	ctx := context.Background()
	set, err := DefaultPolicySet()
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(ctx, set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ledger := NewLedger(time.Minute)
	quota := corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "team-a"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("40")}},
	}
	var admitted, denied atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := mpiRequest("team-a", 1)
			req.TrainJob.Name = fmt.Sprintf("job-%d", i)
			req.TrainJob.Spec.ActiveDeadlineSeconds = 3600
			req.View = gpuView(1)
			req.Quotas = []corev1.ResourceQuota{quota}

			unlock := ledger.Lock("team-a")
			defer unlock()
			req.Reserved = ledger.InFlight("team-a", req.TrainJob.Name, nil)
			d, err := e.Decide(ctx, req)
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				ledger.Reserve("team-a", req.TrainJob.Name, req.View)
				admitted.Add(1)
			} else {
				denied.Add(1)
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 10 || denied.Load() != 30 {
		t.Errorf("admitted %d, denied %d; want 10 and 30", admitted.Load(), denied.Load())
	}
}

func TestLedgerExpiryAndSettling(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewLedger(30 * time.Second)
	l.now = func() time.Time { return now }
	l.Reserve("a", "one", gpuView(1))
	l.Reserve("a", "two", gpuView(1))
	l.Reserve("b", "three", gpuView(1))

	names := func(rs []Reservation) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.TrainJob)
		}
		return out
	}
	if diff := cmp.Diff([]string{"a/two"}, names(l.InFlight("a", "one", nil))); diff != "" {
		t.Errorf("excluding the decided job (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a/one"}, names(l.InFlight("a", "", func(n string) bool { return n == "two" }))); diff != "" {
		t.Errorf("settled entries dropped (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a/one"}, names(l.InFlight("a", "", nil))); diff != "" {
		t.Errorf("a settled entry came back (-want +got):\n%s", diff)
	}
	now = now.Add(31 * time.Second)
	if diff := cmp.Diff([]string{}, names(l.InFlight("a", "", nil))); diff != "" {
		t.Errorf("expired entries kept (-want +got):\n%s", diff)
	}
	l.Release("b", "three")
	now = now.Add(-31 * time.Second)
	if diff := cmp.Diff([]string{}, names(l.InFlight("b", "", nil))); diff != "" {
		t.Errorf("released entry kept (-want +got):\n%s", diff)
	}
}
