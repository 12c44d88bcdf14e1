package render

import (
	"bufio"
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"
)

// FuzzRender renders arbitrary TrainJob/runtime pairs, each given as JSON (a
// runtime whose kind is TrainingRuntime is namespaced, any other a
// ClusterTrainingRuntime), defaulted as `mpiguard check` defaults objects read
// from files. For every pair Render returns a view or an error, never panics,
// never hides one of its own panics behind its recover (see recoveredPanic),
// and a view is self-consistent (checkView). Rendering the same pair through
// the template cache (a runtime with a UID and resourceVersion, as read from
// the apiserver) gives exactly the uncached result.
func FuzzRender(f *testing.F) {
	for _, pair := range samplePairs(f) {
		f.Add(pair[0], pair[1])
	}
	for _, c := range seedCases() {
		f.Add(mustJSON(f, c.trainJob), mustJSON(f, c.runtime))
	}
	r := renderer(f)
	f.Fuzz(func(t *testing.T, trainJobJSON, runtimeJSON []byte) {
		tj := &trainer.TrainJob{}
		if stdjson.Unmarshal(trainJobJSON, tj) != nil {
			return
		}
		rt, err := runtimeFromJSON(runtimeJSON)
		if err != nil {
			return
		}
		if ApplyDefaults(tj, rt) != nil {
			return
		}
		renderAndCheck(t, r, tj, rt)
	})
}

// renderAndCheck renders tj with rt uncached, then twice through the template
// cache, and checks the three agree and the view is self-consistent.
func renderAndCheck(t *testing.T, r *Renderer, tj *trainer.TrainJob, rt client.Object) *JobView {
	t.Helper()
	in := Input{TrainJob: tj, Runtime: rt}
	view, err := r.Render(context.Background(), in)
	if (view == nil) == (err == nil) {
		t.Fatalf("want exactly one of view and error, got view=%t err=%v", view != nil, err)
	}
	if recoveredPanic(err) {
		t.Fatalf("Render recovered from a panic: %v", err)
	}
	if view != nil {
		checkView(t, tj, view)
	}

	// The cache is keyed by the runtime's UID and resourceVersion: a fresh
	// UID per pair, so entries never leak from one pair to the next.
	cached := rt.DeepCopyObject().(client.Object)
	cached.SetUID(nextUID())
	cached.SetResourceVersion("1")
	for range 2 {
		again, againErr := r.Render(context.Background(), Input{TrainJob: tj, Runtime: cached})
		if (err == nil) != (againErr == nil) {
			t.Fatalf("uncached error %v, cached error %v", err, againErr)
		}
		if view != nil && !equality.Semantic.DeepEqual(view, again) {
			t.Fatalf("the cached render differs (-uncached +cached):\n%s", cmp.Diff(summarize(view), summarize(again)))
		}
	}
	return view
}

// recoveredPanic says whether err is Render's recover turning a panic into an
// error. The recover is a last guard for the Trainer's plugins, which
// dereference fields the apiserver defaults; input that reaches it is input
// prepareInput should have refused with a reason, or a bug.
func recoveredPanic(err error) bool {
	return err != nil && strings.Contains(err.Error(), "the Trainer runtime failed on this input")
}

// checkView checks what holds for every view: replicated job pod counts are
// not negative and add up to the total, Launcher and Workers point into
// ReplicatedJobs, and the MPI fields come from the job.
func checkView(t *testing.T, tj *trainer.TrainJob, v *JobView) {
	t.Helper()
	var pods int64
	for i := range v.ReplicatedJobs {
		rj := &v.ReplicatedJobs[i]
		if rj.Pods < 0 {
			t.Fatalf("replicated job %q has %d pods", rj.Name, rj.Pods)
		}
		if rj.PerPod.Pods != 1 {
			t.Fatalf("replicated job %q: a pod is charged %d pods", rj.Name, rj.PerPod.Pods)
		}
		pods += int64(rj.Pods)
	}
	if v.Total.Pods != pods {
		t.Fatalf("total pods %d, replicated jobs add up to %d", v.Total.Pods, pods)
	}
	for name, p := range map[string]*ReplicatedJobView{"launcher": v.Launcher, "workers": v.Workers} {
		if p == nil {
			continue
		}
		found := false
		for i := range v.ReplicatedJobs {
			found = found || p == &v.ReplicatedJobs[i]
		}
		if !found {
			t.Fatalf("%s does not point into ReplicatedJobs", name)
		}
	}
	if v.MPI && tj.Spec.Trainer != nil && tj.Spec.Trainer.NumNodes != nil && v.NumNodes != *tj.Spec.Trainer.NumNodes {
		t.Fatalf("numNodes %d, the TrainJob asks for %d", v.NumNodes, *tj.Spec.Trainer.NumNodes)
	}
}

// uids numbers the runtimes of cached renders.
var uids atomic.Int64

// nextUID is a new UID for each cached render.
func nextUID() types.UID { return types.UID("fuzz-" + strconv.FormatInt(uids.Add(1), 10)) }

// runtimeFromJSON reads a runtime: a TrainingRuntime when its kind says so,
// else a ClusterTrainingRuntime.
func runtimeFromJSON(data []byte) (client.Object, error) {
	var meta metav1.TypeMeta
	if err := stdjson.Unmarshal(data, &meta); err != nil {
		return nil, err
	}
	var rt client.Object = &trainer.ClusterTrainingRuntime{}
	if meta.Kind == trainer.TrainingRuntimeKind {
		rt = &trainer.TrainingRuntime{}
	}
	return rt, stdjson.Unmarshal(data, rt)
}

// samplePairs returns (TrainJob, runtime) JSON pairs from the policy samples
// and the curated runtimes: each sample's TrainJobs with the runtime they name,
// and a plain TrainJob with each curated runtime.
func samplePairs(tb testing.TB) [][2][]byte {
	tb.Helper()
	runtimes := map[string][]byte{}
	var jobs [][]byte
	files, _ := filepath.Glob("../../policies/*/samples/*.yaml")
	curated, _ := filepath.Glob("../../runtimes/catalog/templates/*.yaml")
	if len(files) == 0 || len(curated) == 0 {
		tb.Fatal("no policy samples or curated runtimes found")
	}
	var pairs [][2][]byte
	for _, file := range append(curated, files...) {
		for _, doc := range yamlDocs(tb, file) {
			var meta struct {
				Kind     string
				Metadata metav1.ObjectMeta
			}
			if err := stdjson.Unmarshal(doc, &meta); err != nil {
				tb.Fatalf("%s: %v", file, err)
			}
			switch meta.Kind {
			case trainer.ClusterTrainingRuntimeKind, trainer.TrainingRuntimeKind:
				runtimes[meta.Metadata.Name] = doc
				if strings.Contains(file, "catalog") {
					pairs = append(pairs, [2][]byte{
						[]byte(`{"metadata":{"name":"job","namespace":"team-a"},"spec":{"runtimeRef":{"name":"` + meta.Metadata.Name + `"},"trainer":{"numNodes":3,"resourcesPerNode":{"requests":{"cpu":"2","nvidia.com/gpu":"1"}}}}}`),
						doc,
					})
				}
			case trainer.TrainJobKind:
				jobs = append(jobs, doc)
			}
		}
	}
	for _, job := range jobs {
		var tj trainer.TrainJob
		if err := stdjson.Unmarshal(job, &tj); err != nil {
			tb.Fatal(err)
		}
		if rt, ok := runtimes[tj.Spec.RuntimeRef.Name]; ok {
			pairs = append(pairs, [2][]byte{job, rt})
		}
	}
	return pairs
}

// yamlDocs returns the documents of a multi-document YAML file as JSON.
func yamlDocs(tb testing.TB, file string) [][]byte {
	tb.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			tb.Fatalf("%s: %v", file, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			tb.Fatalf("%s: %v", file, err)
		}
		if !bytes.Equal(js, []byte("null")) {
			out = append(out, js)
		}
	}
}

// seedCase is a TrainJob and runtime pair built with the test helpers.
type seedCase struct {
	trainJob *trainer.TrainJob
	runtime  *trainer.ClusterTrainingRuntime
}

// seedCases are shapes TestRenderOddInputNeverPanics and TestRender cover:
// the launcher as a node, patches, odd quantities, an extra replicated job.
func seedCases() []seedCase {
	withOther := mpiRuntime()
	withOther.Spec.Template.Spec.ReplicatedJobs = append(withOther.Spec.Template.Spec.ReplicatedJobs,
		jobsetv1alpha2.ReplicatedJob{Name: "initializer", Replicas: 2, Template: jobTemplate(nil, corev1.Container{Name: "init", Image: "busybox"})})
	withOther.Spec.Template.Spec.ReplicatedJobs[2].Template.Spec.Parallelism = ptr.To[int32](3)
	return []seedCase{
		{trainJob(numNodes(2), procPerNode(4), resourcesPerNode(rl("cpu=4", "nvidia.com/gpu=4"), rl("nvidia.com/gpu=4"))), mpiRuntime()},
		{trainJob(numNodes(3)), mpiRuntime(launcherAsNode(true), runtimeProcPerNode(2))},
		{trainJob(numNodes(1), nodeSelectorPatch("x.io/y", map[string]string{"pool": "gpu"}, "node", "launcher")), mpiRuntime(containerResources("launcher", rl("cpu=1"), nil))},
		{trainJob(numNodes(2), resourcesPerNode(nil, rl("cpu=-1", "memory=1Ei"))), mpiRuntime(podResources("node", rl("cpu=1"), rl("cpu=2")))},
		{trainJob(numNodes(2)), withOther},
		{trainJob(numNodes(2)), mpiRuntime(runtimeClass("node", "kata"), initContainers("node", corev1.Container{Name: "init", Image: "busybox"}))},
	}
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	data, err := stdjson.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
