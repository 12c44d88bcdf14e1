package load

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mpiguard/mpiguard/api/v1alpha1"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// BenchmarkSequentialCreate is where the time of one create with a quota goes,
// and how it grows with the jobs a namespace holds quota for, with mpiguard as
// shipped (two replicas: "reserving"), then the same creates into namespaces
// the webhooks do not select ("unselected": mpiguard's controllers still act
// on them), then
// again with both replicas stopped ("alone": the apiserver by itself), and
// last into namespaces with a quota served by floorWebhook ("floor": the
// apiserver calls the guarantee needs, with none of mpiguard's decisions).
// Two windows each:
//
//   - "few": fewWindow creates into each of fewNamespaces fresh namespaces
//     with a GPU quota, so a namespace holds at most fewWindow entries: what
//     a create costs where admitted jobs soon start their pods (in a cluster
//     with the Trainer, JobSet and the Job controller, entries leave seconds
//     after admission; no pod ever appears here);
//   - "last": MPIGUARD_SEQ_JOBS (500) creates into one namespace, the last
//     lastWindow measured: a namespace holding hundreds of admitted jobs that
//     wait for their pods.
//
// For each it reports the p50 latency, the CPU each process spent per create
// (kube-apiserver, etcd, and this process: both mpiguard replicas and the
// client) read from /proc, and the apiserver's requests per create from its
// apiserver_request_total. MPIGUARD_SEQ_CPUPROFILE=FILE profiles this process
// and MPIGUARD_SEQ_APISERVER_PROFILE=FILE the kube-apiserver (15 s) over the
// reserving window MPIGUARD_SEQ_PROFILE_WINDOW names (few or last, default
// last). mpiguard's garbage collector runs as shipped (asShipped).
// MPIGUARD_SEQ_NODES=N creates N Nodes first (createNodes: four node groups
// in three zones, as API objects; it fails unless mpiguard's node-capacity
// input counts all N), so creates with a cluster's Nodes compare with none.
//
//	go test -run '^$' -bench SequentialCreate -benchtime 1x ./test/load/
func BenchmarkSequentialCreate(b *testing.B) {
	ctx := context.Background()
	ctrl.SetLogger(logr.Discard())
	jobs := envCount(b, "MPIGUARD_SEQ_JOBS", 500)
	defer asShipped(b)()
	profiled := "reserving-" + cmp.Or(os.Getenv("MPIGUARD_SEQ_PROFILE_WINDOW"), "last")
	env, err := framework.Start(ctx, framework.Options{Name: "sequential", Replicas: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop(false) }()
	c := tenantClient(ctx, b, env)
	rt := gpuRuntime(ctx, b, env, "seq-8gpu")
	excludeBaselineNamespaces(ctx, b, env.Client)
	nodes := 0
	if os.Getenv("MPIGUARD_SEQ_NODES") != "" {
		nodes = envCount(b, "MPIGUARD_SEQ_NODES", 0)
		createNodes(ctx, b, env, nodes, c, plainNamespace(ctx, b, env, ""), rt.Name)
	}
	b.ReportMetric(float64(nodes), "nodes")
	last := min(lastWindow, jobs)
	create := func(ns string, i int) time.Duration {
		job := fixtures.TrainJob(ns, fmt.Sprintf("seq-%04d", i), rt.Name).NumNodes(2).NumProcPerNode(4).Obj()
		t0 := time.Now()
		must(b, c.Create(ctx, job))
		return time.Since(t0)
	}

	for range b.N {
		var template *v1alpha1.QuotaReservation // the reserving run's, for the floor
		p50 := map[string]time.Duration{}
		for _, run := range []struct {
			name      string
			namespace func() string
		}{
			{"reserving", func() string { return quotaNamespace(ctx, b, env, "1000000", "") }},
			{"unselected", func() string { return plainNamespace(ctx, b, env, baselineLabel) }},
			{"alone", func() string { return plainNamespace(ctx, b, env, baselineLabel) }},
			{"floor", func() string { return quotaNamespace(ctx, b, env, "1000000", "") }},
		} {
			switch run.name {
			case "alone":
				// The apiserver alone: in "unselected" mpiguard's
				// controllers (audit, the per-job NetworkPolicies, two
				// replicas' informers) still act on these namespaces.
				for _, r := range env.Replicas {
					must(b, r.Stop())
				}
			case "floor":
				defer startFloor(ctx, b, env, template, jobGPUs)()
			}
			spread := make([]string, fewNamespaces)
			for i := range spread {
				spread[i] = run.namespace()
			}
			w := startWindow(ctx, b, env.Config, run.name+"-few", profiled)
			for _, ns := range spread {
				for i := range fewWindow {
					w.latencies = append(w.latencies, create(ns, i))
				}
			}
			w.stop()
			p50[run.name+"-few"] = pct(w.latencies, 50)

			ns := run.namespace()
			for i := range jobs - last {
				create(ns, i)
			}
			w = startWindow(ctx, b, env.Config, run.name+"-last", profiled)
			for i := jobs - last; i < jobs; i++ {
				w.latencies = append(w.latencies, create(ns, i))
			}
			w.stop()
			p50[run.name+"-last"] = pct(w.latencies, 50)
			if run.name == "reserving" {
				template = reservationSize(ctx, b, env, ns, jobs)
			}
		}
		// The target compares the reserving creates with the
		// apiserver by itself; the floor says how much of that any
		// reservation costs here.
		for _, window := range []string{"few", "last"} {
			alone := p50["alone-"+window]
			b.Logf("%s: p50 against the apiserver by itself: reserving %.1f×, floor %.1f×, unselected %.1f×", window,
				ratio(p50["reserving-"+window], alone), ratio(p50["floor-"+window], alone), ratio(p50["unselected-"+window], alone))
		}
	}
}

// ratio is a/b, 0 when b is.
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// The windows of BenchmarkSequentialCreate, in creates.
const (
	fewNamespaces = 30
	fewWindow     = 20
	lastWindow    = 100
)

// window is a run of creates measured together.
type window struct {
	ctx       context.Context
	b         *testing.B
	cfg       *rest.Config
	name      string
	before    map[string]time.Duration
	requests  map[string]float64
	latencies []time.Duration
	// stopProfile ends the window's CPU profile of this process, if any.
	stopProfile func()
}

// startWindow starts measuring the window name; when it is the window
// profiled, it starts the profiles MPIGUARD_SEQ_CPUPROFILE and
// MPIGUARD_SEQ_APISERVER_PROFILE ask for.
func startWindow(ctx context.Context, b *testing.B, cfg *rest.Config, name, profiled string) *window {
	quiesce(b)
	w := &window{ctx: ctx, b: b, cfg: cfg, name: name, requests: requestTimes(ctx, b, cfg), before: cpuNow(b), stopProfile: func() {}}
	if name == profiled {
		w.stopProfile = cpuProfile(b, os.Getenv("MPIGUARD_SEQ_CPUPROFILE"))
		go apiserverProfile(ctx, b, cfg, os.Getenv("MPIGUARD_SEQ_APISERVER_PROFILE"))
	}
	return w
}

// stop reports the window's p50 latency and the CPU per create of the
// apiserver, etcd and this process.
func (w *window) stop() {
	w.stopProfile()
	w.b.ReportMetric(pct(w.latencies, 50).Seconds()*1e3, w.name+"-p50-ms")
	w.b.Logf("%s: %d creates, p50 %v", w.name, len(w.latencies), pct(w.latencies, 50))
	creates := float64(len(w.latencies))
	reportCPU(w.b, w.name, w.before, cpuNow(w.b), creates, "/create")
	reportRequests(w.b, w.name, w.requests, requestTimes(w.ctx, w.b, w.cfg), creates)
}

// quiesce waits (at most a minute) until the apiserver, etcd and this
// process together use less than a tenth of a core, so a window does not pay
// for the work the one before it left (an audit of its namespaces, events).
func quiesce(b *testing.B) {
	const step = time.Second
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		before := cpuNow(b)
		time.Sleep(step)
		after := cpuNow(b)
		var used time.Duration
		for p := range after {
			used += after[p] - before[p]
		}
		if used < step/10 {
			return
		}
	}
	b.Logf("the machine did not come to rest within a minute")
}

// reportCPU reports the CPU the apiserver, etcd and this process spent
// between before and after, divided by n units of work (unit "/create", or
// n 1 and unit "" for the whole).
func reportCPU(b *testing.B, name string, before, after map[string]time.Duration, n float64, unit string) {
	var parts []string
	for _, p := range []string{"kube-apiserver", "etcd", "self"} {
		ms := (after[p] - before[p]).Seconds() * 1e3 / n
		b.ReportMetric(ms, name+"-"+p+"-cpu-ms"+unit)
		parts = append(parts, fmt.Sprintf("%s %.2f ms", p, ms))
	}
	b.Logf("%s: CPU%s: %s", name, unit, strings.Join(parts, ", "))
}

// reportRequests logs the apiserver's requests between before and after
// by verb and resource, divided by per (those at least once in ten), and
// the time it spent in them and in each webhook's calls.
func reportRequests(b *testing.B, name string, before, after map[string]float64, per float64) {
	var lines, times []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		n := (after[k] - before[k]) / per
		switch ms, ok := strings.CutPrefix(k, "ms "); {
		case ok && n >= 0.05:
			times = append(times, fmt.Sprintf("%s %.2f", ms, n))
		case !ok && n >= 0.1:
			lines = append(lines, fmt.Sprintf("%s %.1f", k, n))
		}
	}
	b.Logf("%s: apiserver requests (per %v): %s", name, per, strings.Join(lines, ", "))
	b.Logf("%s: apiserver time in ms (per %v): %s", name, per, strings.Join(times, ", "))
}

// cpuNow is the CPU time (user + system) so far of this process ("self") and
// of its children the kube-apiserver and etcd (the control plane's binaries).
func cpuNow(b *testing.B) map[string]time.Duration {
	self, err := framework.ReadProcStat(os.Getpid())
	must(b, err)
	out := map[string]time.Duration{"self": self.CPU}
	assets, err := framework.BinaryAssets()
	must(b, err)
	procs, err := framework.ProcessesRunning(assets)
	must(b, err)
	for _, p := range procs {
		if p.PPID == os.Getpid() {
			out[p.Name] += p.CPU
		}
	}
	return out
}

// requestTimes is apiserverRequests plus the time mpiguard's webhook handlers
// took ("ms handler <path>", both replicas: controller-runtime's latency
// histogram, decoding the review to writing the answer), which, against the
// apiserver's time in the same webhook, shows what the call itself costs,
// and the replicas' writes of reservation entries by result ("reservation
// writes conflict": a write lost to the other replica, decided again).
func requestTimes(ctx context.Context, b *testing.B, cfg *rest.Config) map[string]float64 {
	out := apiserverRequests(ctx, b, cfg)
	families, err := metrics.Registry.Gather()
	must(b, err)
	for _, mf := range families {
		switch mf.GetName() {
		case "controller_runtime_webhook_latency_seconds":
			for _, m := range mf.GetMetric() {
				out["ms handler "+labelValue(m, "webhook")] += m.GetHistogram().GetSampleSum() * 1e3
			}
		case "mpiguard_quota_reservation_writes_total":
			for _, m := range mf.GetMetric() {
				out["reservation writes "+labelValue(m, "result")] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// apiserverRequests counts the kube-apiserver's requests so far by verb and
// resource ("POST trainjobs"), from its apiserver_request_total.
func apiserverRequests(ctx context.Context, b *testing.B, cfg *rest.Config) map[string]float64 {
	rc, err := rest.RESTClientFor(restConfigForMetrics(cfg))
	must(b, err)
	body, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	must(b, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	must(b, err)
	out := map[string]float64{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		out[labelValue(m, "verb")+" "+labelValue(m, "resource")+labelValue(m, "subresource")] += m.GetCounter().GetValue()
	}
	// Milliseconds, keyed "ms ..." so reportRequests prints them apart:
	// where a create's wall time goes (a TrainJob's POST includes its
	// webhook calls, and the validating call the reservation's GET and PUT).
	for _, m := range families["apiserver_request_duration_seconds"].GetMetric() {
		out["ms "+labelValue(m, "verb")+" "+labelValue(m, "resource")+labelValue(m, "subresource")] += m.GetHistogram().GetSampleSum() * 1e3
	}
	for _, m := range families["apiserver_admission_webhook_admission_duration_seconds"].GetMetric() {
		out["ms webhook "+labelValue(m, "name")] += m.GetHistogram().GetSampleSum() * 1e3
	}
	// API Priority and Fairness: requests rejected (429, which client-go
	// retries after the answer's Retry-After) and the time requests waited
	// in its queues, by priority level; part of a POST's time.
	for _, m := range families["apiserver_flowcontrol_rejected_requests_total"].GetMetric() {
		out["APF rejected "+labelValue(m, "priority_level")] += m.GetCounter().GetValue()
	}
	for _, m := range families["apiserver_flowcontrol_request_wait_duration_seconds"].GetMetric() {
		out["ms APF wait "+labelValue(m, "priority_level")] += m.GetHistogram().GetSampleSum() * 1e3
	}
	return out
}

func restConfigForMetrics(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{}
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return c
}

// reservationSize reports the size of namespace ns's QuotaReservation as
// stored (JSON, managedFields included) once it holds jobs entries: what
// every create's write carries. It returns the object.
func reservationSize(ctx context.Context, b *testing.B, env *framework.Env, ns string, jobs int) *v1alpha1.QuotaReservation {
	var res v1alpha1.QuotaReservation
	must(b, env.Client.Get(ctx, client.ObjectKey{Namespace: env.PolicyNamespace, Name: ns}, &res))
	js, err := json.Marshal(&res)
	must(b, err)
	b.ReportMetric(float64(len(js)), "reservation-bytes")
	b.Logf("QuotaReservation of %s with %d entries: %d bytes", ns, jobs, len(js))
	return &res
}

// apiserverProfile writes a 15 s CPU profile of the kube-apiserver (its
// /debug/pprof, as an admin) to path; nothing when path is empty.
func apiserverProfile(ctx context.Context, b *testing.B, cfg *rest.Config, path string) {
	if path == "" {
		return
	}
	rc, err := rest.RESTClientFor(restConfigForMetrics(cfg))
	if err == nil {
		var body []byte
		if body, err = rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", "15").DoRaw(ctx); err == nil {
			err = os.WriteFile(path, body, 0o644)
		}
	}
	b.Logf("apiserver profile %s: %v", path, err)
}
