package render

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestQuotaUsage(t *testing.T) {
	c := Charge{
		Requests: rl("cpu=3", "memory=6Gi", "ephemeral-storage=10Gi", "nvidia.com/gpu=4", "hugepages-2Mi=1Gi", "example.com/foo=2"),
		Limits:   rl("cpu=6", "memory=12Gi", "nvidia.com/gpu=4"),
		Pods:     3,
	}
	want := map[string]string{
		"pods": "3", "count/pods": "3",
		"cpu": "3", "requests.cpu": "3", "limits.cpu": "6",
		"memory": "6Gi", "requests.memory": "6Gi", "limits.memory": "12Gi",
		"ephemeral-storage": "10Gi", "requests.ephemeral-storage": "10Gi",
		"requests.nvidia.com/gpu": "4",
		"hugepages-2Mi":           "1Gi", "requests.hugepages-2Mi": "1Gi",
		"requests.example.com/foo": "2",
	}
	if diff := cmp.Diff(want, strs(c.QuotaUsage())); diff != "" {
		t.Errorf("QuotaUsage (-want +got):\n%s", diff)
	}
}

func TestAddChargeScalesExactly(t *testing.T) {
	var total Charge
	perPod := Charge{Requests: rl("cpu=1500m", "memory=1Ti"), Limits: rl("cpu=2"), Pods: 1,
		MissingLimits: []corev1.ResourceName{"memory"}}
	addCharge(&total, &perPod, 1000)
	addCharge(&total, &Charge{Requests: rl("cpu=1"), Pods: 1, MissingRequests: []corev1.ResourceName{"memory"}}, 1)
	addCharge(&total, &perPod, 0)
	want := summary{TotalPods: 1001,
		TotalRequests: map[string]string{"cpu": "1501", "memory": "1000Ti"},
		TotalLimits:   map[string]string{"cpu": "2k"}}
	got := summary{TotalPods: total.Pods, TotalRequests: strs(total.Requests), TotalLimits: strs(total.Limits)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("total (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.ResourceName{"memory"}, total.MissingRequests); diff != "" {
		t.Errorf("MissingRequests (-want +got):\n%s", diff)
	}
	// The per-pod charge must not be aliased by the total.
	if q := perPod.Requests[corev1.ResourceCPU]; q.String() != "1500m" {
		t.Errorf("per-pod cpu changed to %s", q.String())
	}
}

// TestRenderConcurrently renders different jobs from many goroutines with one
// Renderer; run with -race to catch shared state.
func TestRenderConcurrently(t *testing.T) {
	r := renderer(t)
	rt := mpiRuntime(launcherAsNode(true))
	if err := ApplyDefaults(rt); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int32(i%5 + 2)
			tj := trainJob(numNodes(n), resourcesPerNode(nil, rl("nvidia.com/gpu=2")))
			for range 5 {
				v, err := r.Render(context.Background(), Input{TrainJob: tj, Runtime: rt})
				if err != nil {
					errs <- err.Error()
					return
				}
				if v.Workers.Pods != n-1 || len(v.Hostfile) != int(n) || v.SlotsPerWorker != 2 {
					errs <- "wrong view under concurrency"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
