package policies_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/mpiguard/mpiguard/internal/check"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
)

// benchCluster is a namespace with a residency zone, a GPU quota with usage,
// a LimitRange, an OpenMPI runtime and a torch (non-MPI) runtime.
const benchCluster = `
apiVersion: v1
kind: Namespace
metadata:
  name: team-eu
  labels: {mpiguard.io/data-residency: eu}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: team-eu, namespace: team-eu}
spec:
  hard: {requests.nvidia.com/gpu: "1024", requests.cpu: "4000", requests.memory: 32Ti, pods: "500"}
status:
  used: {requests.nvidia.com/gpu: "16", requests.cpu: "64", requests.memory: 256Gi, pods: "4"}
---
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: team-eu}
spec:
  limits:
    - type: Container
      defaultRequest: {cpu: 500m, memory: 512Mi}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: openmpi}
spec:
  mlPolicy:
    numNodes: 1
    mpi: {numProcPerNode: 1, mpiImplementation: OpenMPI, sshAuthMountPath: /home/mpiuser/.ssh, runLauncherAsNode: false}
  template:
    spec:
      replicatedJobs:
        - name: launcher
          template:
            spec:
              template:
                spec:
                  containers:
                    - {name: launcher, image: mpioperator/openmpi, resources: {requests: {cpu: "1", memory: 1Gi}}}
        - name: node
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              template:
                spec:
                  containers:
                    - {name: node, image: mpioperator/openmpi}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch}
spec:
  mlPolicy:
    numNodes: 1
    torch: {}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              template:
                spec:
                  containers:
                    - {name: node, image: pytorch/pytorch}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: mpi-64, namespace: team-eu}
spec:
  runtimeRef: {name: openmpi}
  activeDeadlineSeconds: 86400
  trainer:
    numNodes: 64
    numProcPerNode: 8
    resourcesPerNode:
      requests: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}
      limits: {nvidia.com/gpu: "8"}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: torch-4, namespace: team-eu}
spec:
  runtimeRef: {name: torch}
  trainer:
    numNodes: 4
`

type benchEnv struct {
	eng     *engine.Engine
	rnd     *render.Renderer
	cluster *check.Cluster
	pipe    *pipeline.Pipeline
	reader  pipeline.Cluster
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	// The Trainer's runtime framework logs through controller-runtime's
	// logger; without one set, controller-runtime prints a warning and a stack
	// into the benchmark output.
	ctrllog.SetLogger(logr.Discard())
	ctx := context.Background()
	c := check.NewCluster()
	if err := c.Read("bench", strings.NewReader(benchCluster)); err != nil {
		b.Fatal(err)
	}
	objs := []client.Object{c.ClusterRuntimes["openmpi"], c.ClusterRuntimes["torch"], &c.LimitRanges[0]}
	for _, s := range c.TrainJobs {
		objs = append(objs, s.TrainJob)
	}
	if err := render.ApplyDefaults(objs...); err != nil {
		b.Fatal(err)
	}
	// Objects admission reads come from the apiserver (through the informer
	// cache), so they carry a UID and a resourceVersion; the renderer keys its
	// caches on them.
	for i, o := range objs {
		o.SetUID(types.UID(fmt.Sprintf("bench-uid-%d", i)))
		o.SetResourceVersion(strconv.Itoa(1000 + i))
	}
	eng, err := engine.NewDefault(ctx, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rnd, err := render.NewRenderer(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return &benchEnv{eng: eng, rnd: rnd, cluster: c, pipe: pipeline.New(rnd, eng), reader: check.NewReader(c)}
}

// admission is one webhook call's work: the pipeline's Mutate stage (the
// mutating webhook) or Validate stage (the validating webhook), as the
// webhooks call it.
func (e *benchEnv) admission(ctx context.Context, tj *trainer.TrainJob, stage pipeline.Stage) (*pipeline.Evaluation, error) {
	return e.pipe.Run(ctx, e.reader, &pipeline.Request{Operation: engine.Create, User: "bench", TrainJob: tj}, stage)
}

// BenchmarkDecision measures full admission decisions (render + every policy)
// through the admission pipeline, and reports wall-clock p50/p99 and CPU
// time per decision besides ns/op:
//   - mpi-64-workers/mutate: the mutating webhook on a fresh 64-worker job;
//   - mpi-64-workers/validate: the validating webhook on the mutated job (allowed);
//   - non-mpi: a TrainJob of a torch runtime, passed untouched.
func BenchmarkDecision(b *testing.B) {
	env := newBenchEnv(b)
	ctx := context.Background()
	fresh := env.cluster.TrainJobs[0].TrainJob
	admitted, err := env.admission(ctx, fresh, pipeline.Admit)
	if err != nil {
		b.Fatal(err)
	}
	if len(admitted.Patch) == 0 || !admitted.Governed || !admitted.Allowed() {
		b.Fatalf("the 64-worker job is not a mutated, allowed, governed decision: %s", admitted.DenialMessage())
	}
	cases := []struct {
		name  string
		job   *trainer.TrainJob
		stage pipeline.Stage
	}{
		{"mpi-64-workers/mutate", fresh, pipeline.Mutate},
		{"mpi-64-workers/validate", admitted.TrainJob, pipeline.Validate},
		{"non-mpi", env.cluster.TrainJobs[1].TrainJob, pipeline.Validate},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			cpu := cpuTime()
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if _, err := env.admission(ctx, tc.job, tc.stage); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, lat, cpuTime()-cpu)
		})
	}
}

// BenchmarkPolicies measures the validating decision without render (the
// job's input document built, as the pipeline builds it once per job, then
// Rego and results) on the pre-rendered, mutated 64-worker job.
func BenchmarkPolicies(b *testing.B) {
	env := newBenchEnv(b)
	ctx := context.Background()
	tj := env.cluster.TrainJobs[0].TrainJob.DeepCopy()
	rt := env.cluster.ClusterRuntimes["openmpi"]
	view, err := env.rnd.Render(ctx, render.Input{TrainJob: tj, Runtime: rt, LimitRanges: env.cluster.LimitRanges})
	if err != nil {
		b.Fatal(err)
	}
	request := func() *engine.Request {
		doc, err := input.New(&input.Source{Operation: engine.Create, TrainJob: tj, View: view, Namespace: env.cluster.Namespaces["team-eu"], Quotas: env.cluster.Quotas})
		if err != nil {
			b.Fatal(err)
		}
		return &engine.Request{Input: doc}
	}
	m, err := env.eng.Mutations(ctx, request())
	if err != nil {
		b.Fatal(err)
	}
	m.Apply(tj)
	view, err = env.rnd.Render(ctx, render.Input{TrainJob: tj, Runtime: rt, LimitRanges: env.cluster.LimitRanges})
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	cpu := cpuTime()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := env.eng.Decide(ctx, request()); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat, cpuTime()-cpu)
}

// reportPercentiles reports wall-clock p50/p99 per decision and the process
// CPU time per decision (user+system, GC included), which stays meaningful
// when other work shares the machine's cores.
func reportPercentiles(b *testing.B, lat []time.Duration, cpu time.Duration) {
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(lat)), "cpu-ns/op")
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	at := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
}

// cpuTime is the CPU time this process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkJudgeManyHolders measures what a quota round of a burst pays per
// decision (pipeline.Judge: the quota part of the input built again, every
// policy evaluated) for the 64-worker job against a quota that 250 admitted
// jobs hold: allowed (the quota has room) and denied (it has none), each
// against the round's state as it stands (what the holders hold built once
// for all its decisions) and against a new state (the holders changed: the
// decision after an allowed one).
func BenchmarkJudgeManyHolders(b *testing.B) {
	env := newBenchEnv(b)
	ctx := context.Background()
	admitted, err := env.admission(ctx, env.cluster.TrainJobs[0].TrainJob, pipeline.Admit)
	if err != nil {
		b.Fatal(err)
	}
	prepared, err := env.pipe.Prepare(ctx, env.reader, &pipeline.Request{Operation: engine.Create, User: "bench", TrainJob: admitted.TrainJob}, pipeline.Validate)
	if err != nil {
		b.Fatal(err)
	}
	parts := quota.PartsOf(prepared.View)
	holders := make([]quota.Reservation, 250)
	for i := range holders {
		holders[i] = quota.Reservation{TrainJob: fmt.Sprintf("team-eu/held-%03d", i), UID: types.UID(fmt.Sprint(i)), Parts: parts}
	}
	for _, tc := range []struct {
		name  string
		times int64 // the quota's hard limits, in jobs like this one
		want  bool
	}{{"allowed", 1000, true}, {"denied", 100, false}} {
		quotas := []corev1.ResourceQuota{*env.cluster.Quotas[0].DeepCopy()}
		for name, q := range quota.Charge(parts, &quotas[0]) {
			q.Mul(tc.times)
			quotas[0].Spec.Hard[name] = q
		}
		quota.ChargeAgainst(holders, quotas)
		judge := func(b *testing.B, state *input.QuotaState) {
			v, err := env.pipe.Judge(ctx, prepared, state)
			if err != nil {
				b.Fatal(err)
			}
			if v.Allowed() != tc.want {
				b.Fatalf("allowed %v, want %v: %s", v.Allowed(), tc.want, v.DenialMessage())
			}
		}
		b.Run(tc.name+"/same-state", func(b *testing.B) {
			state := input.NewQuotaState(quotas, holders, nil)
			b.ReportAllocs()
			for b.Loop() {
				judge(b, state)
			}
		})
		b.Run(tc.name+"/new-state", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				judge(b, input.NewQuotaState(quotas, holders, nil))
			}
		})
	}
}
