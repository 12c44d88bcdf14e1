package offline

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/policies/engine"
	"github.com/mpiguard/mpiguard/policies/render"
	"github.com/mpiguard/mpiguard/runtimes/constraints"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// The totality property (issue 12): no input the apiserver accepts makes a
// policy fail. TestPoliciesAreTotal writes random but valid clusters —
// Namespace labels and annotations the policies read, curated and upstream
// runtimes and generated ones, ResourceQuotas with scopes and hard/used
// amounts, TrainJobs of every size — as the YAML `mpiguard check -f` reads,
// and evaluates them exactly as check does. Every TrainJob must get a verdict.
//
// The run is deterministic: case i uses seed -total.seed + i. A failure names
// the case's seed; rerun just it with
//
//	go test ./policies/offline -run TestPoliciesAreTotal -total.seed=<seed> -total.n=1 -v
//
// For longer runs: -total.n=100000 or MPIGUARD_TOTAL_N=100000.
var (
	totalN    = flag.Int("total.n", envInt("MPIGUARD_TOTAL_N", 2000), "random clusters TestPoliciesAreTotal evaluates")
	totalSeed = flag.Int64("total.seed", int64(envInt("MPIGUARD_TOTAL_SEED", 20240612)), "seed of TestPoliciesAreTotal's first case")
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func TestPoliciesAreTotal(t *testing.T) {
	ev := checkEvaluator(t)
	pool := runtimePool(t)
	ctx := context.Background()
	start := time.Now()
	var jobs, governed, denied, allowed int
	for i := range *totalN {
		seed := *totalSeed + int64(i)
		docs := randomCluster(rand.New(rand.NewPCG(uint64(seed), 0x6d7069)), pool)
		failf := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("case seed %d (rerun: -total.seed=%d -total.n=1): %s\ninput:\n%s", seed, seed, fmt.Sprintf(format, args...), docs)
		}
		// Read and evaluate as runCheck (cmd/mpiguard/check.go) does.
		c := NewCluster()
		if err := c.Read("random.yaml", strings.NewReader(docs)); err != nil {
			failf("the document reader refuses valid input: %v", err)
		}
		results, err := ev.Evaluate(ctx, c)
		if err != nil {
			failf("Evaluate: %v", err)
		}
		if len(results) != len(c.TrainJobs) || len(results) == 0 {
			failf("%d results for %d TrainJobs", len(results), len(c.TrainJobs))
		}
		for _, r := range results {
			jobs++
			if r.Error != "" {
				failf("TrainJob %s has no verdict: %s", r.TrainJob, r.Error)
			}
			deny := 0
			for _, v := range r.Violations {
				if v.Policy == "" || v.Message == "" || v.Field == "" {
					failf("TrainJob %s: violation without a policy, field or message: %+v", r.TrainJob, v)
				}
				if v.Action == engine.EnforceDeny {
					deny++
				}
			}
			if r.Allowed != (deny == 0) {
				failf("TrainJob %s: allowed %t with %d denials %v", r.TrainJob, r.Allowed, deny, r.Violations)
			}
			switch {
			case !r.Governed:
			case r.Allowed:
				governed++
				allowed++
			default:
				governed++
				denied++
			}
		}
		if code := ExitCode(results); code != 0 && code != 1 {
			failf("check would exit %d", code)
		}
	}
	t.Logf("%d clusters, %d TrainJobs (%d governed: %d allowed, %d denied) in %v",
		*totalN, jobs, governed, allowed, denied, time.Since(start).Round(time.Millisecond))
	// A generator that only produces denials (or only allowed jobs) proves little.
	if *totalN >= 200 && (allowed < *totalN/50 || denied < *totalN/50) {
		t.Errorf("the generator is lopsided: %d allowed, %d denied", allowed, denied)
	}
}

// checkEvaluator is the evaluator runCheck builds with no flags: the embedded
// policies and parameters, the renderer, user mpiguard-check. The engine and
// renderer are fuzzEvaluator's, built once per test process.
func checkEvaluator(t *testing.T) *Evaluator {
	t.Helper()
	ev := *fuzzEvaluator(t)
	ev.User = "mpiguard-check"
	return &ev
}

// poolRuntime is a runtime document with what a TrainJob patching it needs.
type poolRuntime struct {
	name, doc string
	// jobs are the replicated job names (runtime patches may only name these).
	jobs []string
}

var pool struct {
	once     sync.Once
	runtimes []poolRuntime
	err      error
}

// runtimePool is every curated runtime (runtimes/catalog/templates) and every
// upstream Trainer runtime of the pinned module (MPI or not).
func runtimePool(t *testing.T) []poolRuntime {
	t.Helper()
	pool.once.Do(func() {
		files, _ := filepath.Glob("../../runtimes/catalog/templates/*.yaml")
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kubeflow/trainer/v2").Output()
		if err != nil {
			pool.err = fmt.Errorf("locating the Trainer module: %w", err)
			return
		}
		upstream, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "manifests/base/runtimes/*_distributed.yaml"))
		for _, f := range append(files, upstream...) {
			data, err := os.ReadFile(f)
			if err != nil {
				pool.err = err
				return
			}
			var rt trainer.ClusterTrainingRuntime
			if err := yaml.Unmarshal(data, &rt); err != nil {
				pool.err = fmt.Errorf("%s: %w", f, err)
				return
			}
			p := poolRuntime{name: rt.Name, doc: string(data)}
			for _, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
				p.jobs = append(p.jobs, rj.Name)
			}
			pool.runtimes = append(pool.runtimes, p)
		}
		if len(files) < 5 || len(upstream) < 4 {
			pool.err = fmt.Errorf("found %d curated and %d upstream runtimes", len(files), len(upstream))
		}
	})
	if pool.err != nil {
		t.Fatal(pool.err)
	}
	return pool.runtimes
}

const totalNS = "team-a"

// gen draws the values of one cluster. Each cluster has its own wildness:
// the chance that a value is drawn from the edges (0, huge, negative,
// fractional, malformed annotations) instead of the plausible ones. Tame
// clusters reach the allowed paths (quota reservations across TrainJobs,
// mutations), wild ones the corners.
type gen struct {
	r    *rand.Rand
	wild float64
}

func (g *gen) n(k int) int           { return g.r.IntN(k) }
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

// edgy says whether the next value comes from the edges.
func (g *gen) edgy() bool { return g.chance(g.wild) }

func pick[T any](g *gen, xs ...T) T { return xs[g.n(len(xs))] }

// choose picks a plausible value, or an edge one as often as the cluster is wild.
func choose[T any](g *gen, plausible, edges []T) T {
	if len(edges) > 0 && g.edgy() {
		return pick(g, edges...)
	}
	return pick(g, plausible...)
}

// randomCluster writes one random valid cluster as a YAML stream: a
// Namespace, one or two runtimes, up to three ResourceQuotas and one to
// three TrainJobs. "Valid" means what the apiserver (and the Trainer's
// webhook) accepts: field types and schema limits hold, runtime patches name
// replicated jobs the runtime has, quotas have whole non-negative amounts of
// integer resources and scopes fit their resources. Within that, values go
// to the edges: 0, huge, negative where the schema allows it, fractions.
func randomCluster(r *rand.Rand, runtimes []poolRuntime) string {
	g := &gen{r: r, wild: pick(&gen{r: r}, 0, 0.05, 0.2, 0.5)}
	var docs []string
	// Documents are YAML or JSON (check reads both in one stream).
	add := func(obj any) {
		data, err := json.Marshal(obj)
		if err == nil && g.n(2) == 0 {
			data, err = yaml.JSONToYAML(data)
		}
		if err != nil {
			panic(err)
		}
		docs = append(docs, string(data)+"\n")
	}
	add(randomNamespace(g))

	var rts []poolRuntime
	for range 1 + g.n(2) {
		var rt poolRuntime
		if g.n(2) == 0 {
			rt = runtimes[g.n(len(runtimes))]
			if len(rts) > 0 && rts[0].name == rt.name {
				continue // a cluster has one object of a name
			}
			docs = append(docs, rt.doc)
		} else {
			rt = generatedRuntime(g, len(rts), add)
		}
		rts = append(rts, rt)
	}
	for i := range g.n(4) {
		add(randomQuota(g, i))
	}
	for i := range pick(g, 1, 1, 2, 3) {
		add(randomTrainJob(g, i, rts[g.n(len(rts))]))
	}
	// Mix document separators and comments the way hand-written files do.
	var b strings.Builder
	for i, d := range docs {
		if i > 0 || g.n(4) == 0 {
			b.WriteString("---\n")
		}
		if g.n(8) == 0 {
			b.WriteString("# a comment\n")
		}
		b.WriteString(d)
	}
	return b.String()
}

func randomNamespace(g *gen) *corev1.Namespace {
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: totalNS, Labels: map[string]string{}, Annotations: map[string]string{}},
	}
	// Residency zones: configured (one or two values), unknown, empty.
	if g.n(2) == 0 {
		ns.Labels["mpiguard.io/data-residency"] = choose(g, []string{"eu", "us"}, []string{"mars", "", "eu-west-1"})
	}
	// Max duration: any string is a valid annotation value.
	if g.n(2) == 0 {
		ns.Annotations["mpiguard.io/max-duration-hours"] = choose(g, []string{"48", "1", "0.5", "336", "168.000"},
			[]string{"0.0001", "0.0002", "0", "-3", "ten hours", "1e3", "99999999999999999999", "", " 8 ", "3.", "NaN", "Inf"})
	}
	return ns
}

// generatedRuntime adds a ClusterTrainingRuntime or TrainingRuntime built
// with random knobs: Launcher as node or not, Slots per worker, the runtime's
// numNodes, replicas, resources of the Launcher and Workers, constraint
// annotations (well-formed or not: any string is a valid annotation).
func generatedRuntime(g *gen, i int, add func(any)) poolRuntime {
	name := fmt.Sprintf("gen-%d", i)
	b := fixtures.MPIRuntime(name).
		RunLauncherAsNode(g.n(2) == 0).
		SlotsPerWorker(choose(g, []int32{1, 2, 4, 8}, []int32{0, 64})).
		NumNodes(choose(g, []int32{1}, []int32{2, 4}))
	if g.edgy() {
		b.Replicas("node", pick[int32](g, 0, 2, 3))
	}
	if g.edgy() {
		b.Replicas("launcher", pick[int32](g, 0, 2))
	}
	for _, job := range []string{"launcher", "node"} {
		if g.n(3) > 0 {
			req, lim := randomResources(g, job == "node")
			b.Resources(job, req, lim)
		}
	}
	for key, values := range map[string][][]string{
		constraints.AnnotationMaxWorkers:         {{"4", "64", "1000000"}, {"0", "-1", "many"}},
		constraints.AnnotationMaxGPUsPerWorker:   {{"8", "1"}, {"0", "x"}},
		constraints.AnnotationRequiredNodeLabels: {{"topology.kubernetes.io/region"}, {"pool=gpu", "nvidia.com/gpu.present", "a=b,c", "bad key!", ""}},
		constraints.AnnotationAllowedNamespaces:  {{"team-*", totalNS, "team-a,ml-*"}, {"other", "["}},
	} {
		if g.n(5) == 0 {
			b.Annotation(key, choose(g, values[0], values[1]))
		}
	}
	if g.n(3) == 0 {
		b.Label("trainer.kubeflow.org/framework", "mpi")
	}
	if g.n(4) == 0 {
		add(b.Namespaced(totalNS))
		return poolRuntime{name: name, jobs: []string{"launcher", "node"}, doc: "namespaced"}
	}
	add(b.Cluster())
	return poolRuntime{name: name, jobs: []string{"launcher", "node"}}
}

// randomQuantity is a quantity the CRD schema accepts for a resource: zero,
// ordinary, huge, fractional, negative (resourcesPerNode has no minimum).
func randomQuantity(g *gen, res corev1.ResourceName) string {
	switch res {
	case corev1.ResourceCPU:
		return choose(g, []string{"100m", "500m", "1", "4", "64"}, []string{"0", "1000000", "1e18", "-1", "0.001"})
	case corev1.ResourceMemory:
		return choose(g, []string{"1Gi", "8Gi", "512Mi", "1.5Gi"}, []string{"0", "1Ti", "8Ei", "999999999999Ei", "-1Gi", "1"})
	default:
		return choose(g, []string{"1", "2", "4", "8"}, []string{"0", "1000", "1e18", "0.5", "-1"})
	}
}

// randomResources draws requests and limits of cpu, memory and GPUs. Tame
// GPUs have a limit equal to the request (the apiserver requires it of
// extended resources in pods); gpus false leaves GPUs out.
func randomResources(g *gen, gpus bool) (req, lim corev1.ResourceList) {
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	if gpus {
		names = append(names, "nvidia.com/gpu")
	}
	req, lim = corev1.ResourceList{}, corev1.ResourceList{}
	quantity := func(n corev1.ResourceName) resource.Quantity {
		return resource.MustParse(randomQuantity(g, n))
	}
	for _, n := range names {
		switch {
		case g.n(4) == 0: // absent
		case g.edgy() && g.n(2) == 0:
			lim[n] = quantity(n)
		case g.edgy() || (n != "nvidia.com/gpu" && g.n(2) == 0):
			req[n] = quantity(n)
		default:
			q := quantity(n)
			req[n], lim[n] = q, q
			if g.edgy() {
				lim[n] = quantity(n)
			}
		}
	}
	if len(req) == 0 {
		req = nil
	}
	if len(lim) == 0 {
		lim = nil
	}
	return req, lim
}

// quotaAmount is a whole non-negative amount (the apiserver refuses others
// for integer resources; cpu and memory may be fractional).
func quotaAmount(g *gen, res corev1.ResourceName) string {
	s := string(res)
	switch {
	case strings.HasSuffix(s, "cpu"):
		return choose(g, []string{"8", "64", "100"}, []string{"0", "500m", "1", "100000", "0.5"})
	case strings.HasSuffix(s, "memory"):
		return choose(g, []string{"64Gi", "1Ti"}, []string{"0", "1Gi", "1Ei", "8Ei", "1.5Gi"})
	default:
		return choose(g, []string{"8", "16", "100"}, []string{"0", "1", "2", "4", "999999999999999999999"})
	}
}

func randomQuota(g *gen, i int) *corev1.ResourceQuota {
	compute := []corev1.ResourceName{"requests.nvidia.com/gpu", "limits.nvidia.com/gpu", "requests.cpu", "limits.cpu",
		"requests.memory", "limits.memory", "cpu", "memory", "pods"}
	q := fixtures.ResourceQuota(totalNS, fmt.Sprintf("quota-%d", i))
	q.Spec.Hard = corev1.ResourceList{}
	// Scopes must fit their resources: BestEffort tracks pods only.
	scope := choose(g, []string{""}, []string{"Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass"})
	names := compute
	if scope == "BestEffort" {
		names = []corev1.ResourceName{"pods"}
	}
	for range 1 + g.n(3) {
		n := names[g.n(len(names))]
		q.Spec.Hard[n] = resource.MustParse(quotaAmount(g, n))
	}
	switch scope {
	case "":
	case "PriorityClass":
		op := pick(g, corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn, corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist)
		req := corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op}
		if op == corev1.ScopeSelectorOpIn || op == corev1.ScopeSelectorOpNotIn {
			req.Values = []string{pick(g, "high", "low")}
		}
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{req}}
	default:
		q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScope(scope)}
	}
	// status.used as the quota controller writes it: a subset of hard, any
	// non-negative amount (it may exceed hard: quota lowered after the fact).
	q.Status.Hard = q.Spec.Hard
	q.Status.Used = corev1.ResourceList{}
	for n := range q.Spec.Hard {
		if g.n(3) > 0 {
			q.Status.Used[n] = resource.MustParse(choose(g, []string{"0"}, []string{quotaAmount(g, n)}))
		}
	}
	return q
}

func randomTrainJob(g *gen, i int, rt poolRuntime) *trainer.TrainJob {
	b := fixtures.TrainJob(totalNS, fmt.Sprintf("job-%d", i), rt.name)
	if rt.doc == "namespaced" {
		b.NamespacedRuntime()
	}
	if g.n(6) > 0 {
		// Thousands of nodes cost the renderer (hostfiles) most: rare.
		n := choose(g, []int32{1, 2, 3, 4, 8}, []int32{0, 0, 100})
		if g.chance(0.004) {
			n = pick[int32](g, 1000, render.MaxNumNodes)
		}
		b.NumNodes(n)
	}
	if g.n(3) == 0 {
		b.NumProcPerNode(choose(g, []int32{1, 2, 4, 8}, []int32{-1, 0, 1000}))
	}
	if g.n(3) == 0 {
		b.Suspend(g.n(2) == 0)
	}
	if g.n(2) == 0 {
		b.ActiveDeadlineSeconds(choose(g, []int64{60, 3600, 86400}, []int64{1, 604800, 604801, 1 << 40, 1<<63 - 1}))
	}
	if g.n(4) == 0 {
		b.Image(choose(g, []string{"busybox"}, []string{"", "registry.example.com:5000/a/b@sha256:" + strings.Repeat("a", 64), "ÜNICODE"}))
	}
	// env is a map keyed by name: names are unique.
	names := []string{"NCCL_DEBUG", "HOROVOD_CYCLE_TIME", "X"}
	if g.edgy() {
		names = append(names, "OMPI_MCA_plm_rsh_args", "OMPI_MCA_orte_default_hostfile", "ünï", "1X")
	}
	g.r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, n := range names[:g.n(4)] {
		b.Env(n, choose(g, []string{"1"}, []string{"", "ü", strings.Repeat("x", 1000)}))
	}
	// Runtime patches are keyed by manager and may name only the runtime's
	// replicated jobs (the Trainer's webhook refuses others).
	managers := []string{"example.com/placer", "kueue.x-k8s.io/manager", "example.com/user"}
	for _, m := range managers[:g.n(3)] {
		b.RuntimePatch(randomPatch(g, m, rt.jobs))
	}
	if g.n(5) == 0 {
		b.Label(pick(g, "app", "example.com/team"), pick(g, "x", "", "a-b.c_d"))
	}
	tj := b.Obj()
	if g.n(4) > 0 {
		req, lim := randomResources(g, true)
		if tj.Spec.Trainer == nil {
			tj.Spec.Trainer = &trainer.Trainer{}
		}
		tj.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{Requests: req, Limits: lim}
	}
	return tj
}

func randomPatch(g *gen, manager string, jobs []string) trainer.RuntimePatch {
	var rjs []trainer.ReplicatedJobPatch
	for _, job := range jobs {
		if g.n(2) == 0 {
			continue
		}
		pt := &trainer.PodTemplatePatch{}
		if g.n(2) == 0 {
			pt.Metadata = &metav1.ObjectMeta{Labels: map[string]string{}, Annotations: map[string]string{}}
			for range g.n(3) {
				key := pick(g, "sidecar.istio.io/inject", "istio.io/dataplane-mode", "app", "example.com/x")
				value := choose(g, []string{"false", "none", "x"}, []string{"true", "ambient", "", "ü"})
				if g.n(2) == 0 {
					pt.Metadata.Labels[key] = value
				} else {
					pt.Metadata.Annotations[key] = value
				}
			}
		}
		if g.n(2) == 0 {
			pt.Spec = &trainer.PodSpecPatch{}
			if g.n(3) > 0 {
				key := pick(g, "topology.kubernetes.io/region", "pool", "nvidia.com/gpu.present")
				pt.Spec.NodeSelector = map[string]string{key: choose(g, []string{"eu-west-1", "us-east-1", "gpu"}, []string{"eu-central-1", "ap-south-1", "", "true"})}
			}
			if g.n(3) == 0 {
				op := pick(g, corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists)
				expr := corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/region", Operator: op}
				if op != corev1.NodeSelectorOpExists {
					expr.Values = []string{pick(g, "eu-west-1", "us-east-1", "ap-south-1")}
				}
				pt.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr}}},
				}}}
			}
			if g.n(4) == 0 {
				pt.Spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			}
		}
		rjs = append(rjs, trainer.ReplicatedJobPatch{Name: job, Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: pt}}})
	}
	p := trainer.RuntimePatch{Manager: manager}
	if len(rjs) > 0 || g.n(2) == 0 {
		p.TrainingRuntimeSpec = &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: rjs}}}
	}
	return p
}
