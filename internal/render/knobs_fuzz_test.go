package render

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// FuzzRenderKnobs turns the knobs a TrainJob and a runtime admin have over a
// valid MPI job: numNodes, numProcPerNode, resourcesPerNode quantities, the
// launcher as a node, a runtime patch's node selector, an extra replicated
// job's replicas, parallelism and completions, a LimitRange default and a
// RuntimeClass overhead. Every combination the CRDs accept renders without a
// panic (recovered or not), the cached and uncached renders agree, the view is
// self-consistent, and it counts what the job really creates: the extra job's
// pods are replicas x parallelism (as the Trainer sets them), and a worker's
// GPUs are the GPUs asked for per node.
func FuzzRenderKnobs(f *testing.F) {
	f.Add(int32(2), int32(4), "4", "16Gi", "4", false, int32(1), int32(1), int32(-1), "", "", "")
	f.Add(int32(3), int32(1), "500m", "1Gi", "0", true, int32(2), int32(3), int32(2), "250m", "100m", "eu-west-1")
	f.Add(int32(0), int32(0), "", "", "", false, int32(0), int32(0), int32(0), "1", "", "")
	f.Add(int32(-4), int32(-1), "-1", "1Ei", "1k", true, int32(-1), int32(-1), int32(-1), "-1", "-1", "")
	f.Add(int32(MaxNumNodes), int32(8), "96", "1Pi", "8", false, int32(10), int32(100), int32(50), "2", "1Gi", "us-east-1")
	// The int32 boundaries: the mutator moves integers by at most 100 per
	// step, so only seeds reach counts this large.
	f.Add(int32(1), int32(1), "1", "", "", false, int32(math.MaxInt32), int32(2), int32(-1), "", "", "")
	f.Add(int32(1), int32(1), "1", "", "", false, int32(65536), int32(65536), int32(-1), "", "", "")
	r := renderer(f)
	f.Fuzz(func(t *testing.T, nodes, procs int32, cpu, memory, gpus string, launcherIsNode bool,
		replicas, parallelism, completions int32, defaultCPU, overheadCPU, zone string) {
		rt := mpiRuntime(launcherAsNode(launcherIsNode))
		extra := jobsetv1alpha2.ReplicatedJob{Name: "initializer", Replicas: replicas,
			Template: jobTemplate(nil, corev1.Container{Name: "init", Image: "busybox"})}
		extra.Template.Spec.Parallelism = &parallelism
		if completions >= 0 {
			extra.Template.Spec.Completions = &completions
		}
		rt.Spec.Template.Spec.ReplicatedJobs = append(rt.Spec.Template.Spec.ReplicatedJobs, extra)

		tj := trainJob(numNodes(nodes), procPerNode(procs))
		requests, ok := quantities(map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory, "nvidia.com/gpu": gpus})
		if !ok {
			return // not a quantity: the apiserver refuses the TrainJob
		}
		limits := corev1.ResourceList{}
		if q, ok := requests["nvidia.com/gpu"]; ok {
			limits["nvidia.com/gpu"] = q // extended resources: requests must equal limits
		}
		tj.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{Requests: requests, Limits: limits}
		if zone != "" {
			nodeSelectorPatch("example.com/residency", map[string]string{"topology.kubernetes.io/region": zone}, "node", "launcher")(tj)
		}

		var limitRanges []corev1.LimitRange
		if q, err := resource.ParseQuantity(defaultCPU); err == nil {
			limitRanges = []corev1.LimitRange{{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "defaults"},
				Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: q}}}}}}
		}
		var runtimeClasses []nodev1.RuntimeClass
		if q, err := resource.ParseQuantity(overheadCPU); err == nil {
			runtimeClassName := "kata"
			replicatedJob(&rt.Spec, "node").Template.Spec.Template.Spec.RuntimeClassName = &runtimeClassName
			runtimeClasses = []nodev1.RuntimeClass{{ObjectMeta: metav1.ObjectMeta{Name: runtimeClassName}, Handler: "kata",
				Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: q}}}}
		}

		if err := ApplyDefaults(tj, rt); err != nil {
			t.Fatalf("ApplyDefaults: %v", err)
		}
		view := renderAndCheck(t, r, tj, rt)
		if view == nil {
			return
		}
		withContext, err := r.Render(t.Context(), Input{TrainJob: tj, Runtime: rt, LimitRanges: limitRanges, RuntimeClasses: runtimeClasses})
		if err != nil {
			t.Fatalf("renders without a LimitRange and RuntimeClass, but not with them: %v", err)
		}
		checkView(t, tj, withContext)

		// The Trainer runs max(parallelism, 1) pods per replica and sets
		// completions to the same; replicas are as defaulted (0 is unset: 1).
		defaulted := replicatedJob(&rt.Spec, "initializer").Replicas
		want := max(int64(defaulted), 0) * max(int64(parallelism), 1)
		// More pods than an int32 holds are counted as the most it holds:
		// still more than any quota allows.
		want = min(want, math.MaxInt32)
		got := replicatedJobView(view, "initializer")
		if got == nil {
			t.Fatal("the initializer replicated job is not in the view")
		}
		if int64(got.Pods) != want {
			t.Fatalf("initializer: %d pods, want %d (replicas %d, parallelism %d)", got.Pods, want, defaulted, parallelism)
		}
		// resourcesPerNode goes to the ancestor-labelled job (here the
		// launcher) and, with the launcher as a node, to the node job too.
		if q, ok := requests["nvidia.com/gpu"]; ok && q.Sign() >= 0 && launcherIsNode {
			if view.GPUsPerWorker != q.Value() {
				t.Fatalf("%d GPUs per worker, the TrainJob asks for %s per node", view.GPUsPerWorker, q.String())
			}
		}
		if view.Workers == nil || !view.MPI {
			t.Fatalf("an MPI job with a node replicated job rendered without workers or MPI: %+v", summarize(view))
		}
	})
}

func replicatedJobView(v *JobView, name string) *ReplicatedJobView {
	for i := range v.ReplicatedJobs {
		if v.ReplicatedJobs[i].Name == name {
			return &v.ReplicatedJobs[i]
		}
	}
	return nil
}

// quantities parses the non-empty values; ok is false when one is not a quantity.
func quantities(values map[corev1.ResourceName]string) (corev1.ResourceList, bool) {
	out := corev1.ResourceList{}
	for name, v := range values {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, false
		}
		out[name] = q
	}
	return out, true
}
