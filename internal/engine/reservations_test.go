package engine

import (
	"context"
	"fmt"
	"github.com/mpiguard/mpiguard/internal/quota"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/internal/render"
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
	// What admission does: serialise decisions in the namespace and
	// pass the admitted-but-not-visible jobs as Reservations.
	var mu sync.Mutex
	var inflight []quota.Reservation
	q := corev1.ResourceQuota{
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
			req.Quotas = []corev1.ResourceQuota{q}

			mu.Lock()
			defer mu.Unlock()
			req.Reservations = inflight
			d, err := e.Decide(ctx, request(req))
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				inflight = append(inflight, quota.Reservation{TrainJob: "team-a/" + req.TrainJob.Name, Parts: quota.PartsOf(req.View)})
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

// TestJobRunningElsewhereChargesNothing: a job whose pods another cluster
// runs (render.JobView.RunsElsewhere: Kueue's MultiKueue) is charged nothing
// by this namespace's quotas, in the policy input and in what it would
// reserve; the same job run here is denied over the quota.
func TestJobRunningElsewhereChargesNothing(t *testing.T) {
	ctx := context.Background()
	set, err := DefaultPolicySet()
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(ctx, set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "team-a"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("4")}},
	}
	for _, elsewhere := range []bool{true, false} {
		req := mpiRequest("team-a", 2)
		req.TrainJob.Spec.ActiveDeadlineSeconds = 3600
		req.View = gpuView(2) // 8 GPUs
		req.View.RunsElsewhere = elsewhere
		req.Quotas = []corev1.ResourceQuota{q}
		d, err := e.Decide(ctx, request(req))
		if err != nil {
			t.Fatal(err)
		}
		parts := quota.PartsOf(req.View)
		if elsewhere {
			quotas := request(req).Input.Value(nil, nil).(ast.Object).Get(ast.StringTerm("quotas"))
			if !d.Allowed || quotas.Value.(*ast.Array).Len() != 0 || parts != nil {
				t.Errorf("run elsewhere: allowed %v (violations %v), input quotas %v, parts %v; want allowed, no quotas, no parts", d.Allowed, d.Violations, quotas, parts)
			}
			continue
		}
		if d.Allowed || len(parts) == 0 {
			t.Errorf("run here: allowed %v, parts %v; want denied by the quota, with parts", d.Allowed, parts)
		}
	}
}
