package engine

import (
	"context"
	"fmt"
	"github.com/mpiguard/mpiguard/policies/quota"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/policies/render"
)

// variedView is a reserved job's view: i GPUs per worker.
func variedView(i int) *render.JobView {
	v := mpiRequest("team", 2).View
	v.ReplicatedJobs[1].PerPod = render.Charge{Pods: 1, Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(fmt.Sprint(i % 3))}}
	return v
}

// variedRequest is request i of a family that differs in every part of the
// input the term caches share: labels, node selector and required terms,
// per-pod charges, quota limits, usage and reservations, namespace labels.
func variedRequest(i int) *Request {
	req := mpiRequest(fmt.Sprintf("team-%d", i%3), int32(1+i%4))
	req.Namespace.Labels = map[string]string{"mpiguard.io/data-residency": []string{"eu", "us", "mars"}[i%3]}
	zone := []string{"eu-west-1", "us-east-1"}[i%2]
	for j := range req.View.ReplicatedJobs {
		rj := &req.View.ReplicatedJobs[j]
		rj.PodTemplate.Labels = map[string]string{"app": fmt.Sprint("a", i%2), "sidecar.istio.io/inject": []string{"false", "true"}[i%2]}
		rj.PodTemplate.Spec.NodeSelector = map[string]string{"topology.kubernetes.io/region": zone}
		if i%3 == 0 {
			rj.PodTemplate.Spec.NodeSelector = nil
		}
		rj.PodTemplate.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "topology.kubernetes.io/region", Operator: corev1.NodeSelectorOpIn, Values: []string{zone, "eu-central-1"}[:1+i%2]},
			}}},
		}}}
		rj.PerPod = render.Charge{Pods: 1,
			Requests: corev1.ResourceList{"cpu": resource.MustParse(fmt.Sprint(1 + i%5)), "nvidia.com/gpu": resource.MustParse(fmt.Sprint(i % 3))},
		}
		if i%2 == 1 {
			rj.PerPod.MissingLimits = []corev1.ResourceName{"memory"}
		}
	}
	if i%4 == 0 {
		held := variedView(i + 1)
		req.Reserved = []Reservation{{TrainJob: "team/held", Parts: quota.PartsOf(held, []corev1.ResourceQuota{{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("1"), "pods": resource.MustParse("1")}}}})}}
	}
	req.Quotas = []corev1.ResourceQuota{{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse(fmt.Sprint(4 + i%7)), "pods": resource.MustParse("10")}},
		Status:     corev1.ResourceQuotaStatus{Used: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse(fmt.Sprint(i % 2))}},
	}}
	return req
}

// Inputs built from the caches equal inputs built afresh, whatever was built
// before them, and carry their own request's content.
func TestSharedInputTermsAreExact(t *testing.T) {
	params := ast.ObjectTerm()
	build := func(req *Request) ast.Value {
		return buildInput(req, params, namespaceTerm(req.Namespace, req.TrainJob.Namespace))
	}
	const n = 24
	first := make([]ast.Value, n)
	for i := range n {
		first[i] = build(variedRequest(i))
	}
	for round := range 2 {
		for i := n - 1; i >= 0; i-- {
			req := variedRequest(i)
			got := build(req)
			if got.Compare(first[i]) != 0 {
				t.Fatalf("round %d: input %d built again differs:\n%v\nfirst:\n%v", round, i, got, first[i])
			}
			// And it is this request's content, not a neighbour's.
			doc, err := ast.JSON(got)
			if err != nil {
				t.Fatal(err)
			}
			workers := doc.(map[string]any)["job"].(map[string]any)["replicatedJobs"].([]any)[1].(map[string]any)
			if diff := cmp.Diff(anyStrings(req.View.ReplicatedJobs[1].PodTemplate.Labels), workers["labels"]); diff != "" {
				t.Errorf("input %d worker labels (-want +got):\n%s", i, diff)
			}
			if diff := cmp.Diff(anyStrings(req.View.ReplicatedJobs[1].PodTemplate.Spec.NodeSelector), workers["nodeSelector"]); diff != "" {
				t.Errorf("input %d worker node selector (-want +got):\n%s", i, diff)
			}
			reserved, _ := reservedFor(&req.Quotas[0], req.Reserved)
			wantFree, _ := freeMilli(&req.Quotas[0], "requests.nvidia.com/gpu", reserved)
			gpu := doc.(map[string]any)["quotas"].([]any)[0].(map[string]any)["demand"].(map[string]any)["requests.nvidia.com/gpu"].(map[string]any)
			if fmt.Sprint(gpu["free"]) != fmt.Sprint(wantFree) {
				t.Errorf("input %d GPU quota free %v, want %d", i, gpu["free"], wantFree)
			}
			values := workers["requiredNodeSelectorTerms"].([]any)[0].(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)["values"]
			want := req.View.ReplicatedJobs[1].PodTemplate.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values
			if fmt.Sprint(values) != fmt.Sprint(want) {
				t.Errorf("input %d worker affinity values %v, want %v", i, values, want)
			}
		}
	}
}

func anyStrings(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Large maps (annotations holding whole manifests) are built per request, not cached.
func TestLargeMapsNotCached(t *testing.T) {
	big := map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 2*maxCachedKey)}
	if first, second := stringMapTerm(big), stringMapTerm(big); first == second {
		t.Error("a large map was shared")
	}
	small := map[string]string{"a": "b"}
	if first, second := stringMapTerm(small), stringMapTerm(small); first != second {
		t.Error("a small map was not shared")
	}
}

// Concurrent decisions on varied requests, sharing cached terms, decide as
// the same requests decided one by one (run with -race).
func TestConcurrentDecisionsShareTerms(t *testing.T) {
	ctx := context.Background()
	e, err := NewDefault(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	want := make([]*Decision, n)
	for i := range n {
		want[i] = decide(t, e, variedRequest(i))
		want[i].Latency = 0
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*n)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 3 * n {
				i := (g + k) % n
				d, err := e.Decide(ctx, variedRequest(i))
				if err != nil {
					errs <- err.Error()
					return
				}
				d.Latency = 0
				if diff := cmp.Diff(want[i], d); diff != "" {
					errs <- fmt.Sprintf("request %d: (-serial +concurrent):\n%s", i, diff)
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

// TestContentCacheStartsAfreshWhenFull: a cache filled with one-off contents
// keeps caching what comes next instead of refusing it for ever.
func TestContentCacheStartsAfreshWhenFull(t *testing.T) {
	c := newContentCache(maxCachedKey)
	for i := range maxCachedTerms {
		c.cached([]byte(strconv.Itoa(i)), func() *ast.Term { return ast.IntNumberTerm(i) })
	}
	recurring := []byte("recurring")
	first := c.cached(recurring, func() *ast.Term { return ast.StringTerm("recurring") })
	second := c.cached(recurring, func() *ast.Term { return ast.StringTerm("built again") })
	if first != second {
		t.Errorf("after %d one-off contents the cache no longer keeps new ones: got %v, then %v", maxCachedTerms, first, second)
	}
	c.mu.RLock()
	n := len(c.m)
	c.mu.RUnlock()
	if n > maxCachedTerms {
		t.Errorf("the cache holds %d terms, more than its bound %d", n, maxCachedTerms)
	}
}
