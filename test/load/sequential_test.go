package load

import (
	"bytes"
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

	"github.com/mpiguard/mpiguard/policies/quota/api/v1alpha1"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// BenchmarkSequentialCreate is where the time of one create with a quota goes,
// and how it grows with the jobs a namespace holds quota for: TrainJobs created
// one after the other into a namespace with a GPU quota (every create writes
// its reservation; none of their pods ever appears here, so every entry stays),
// with mpiguard as shipped (two replicas), then into a namespace the webhooks
// do not select. For the first firstWindow creates (a namespace holding
// almost nothing) and the last lastWindow (holding jobs-lastWindow entries and
// more) it reports
// the p50 latency and the CPU each process spent per create: the kube-apiserver,
// etcd, and this process (both mpiguard replicas and the client), read from
// /proc. MPIGUARD_SEQ_JOBS sets how many (default 500);
// MPIGUARD_SEQ_CPUPROFILE=FILE profiles this process over the last window,
// MPIGUARD_SEQ_APISERVER_PROFILE=FILE the kube-apiserver over 15 s of it.
//
//	go test -run '^$' -bench SequentialCreate -benchtime 1x ./test/load/
func BenchmarkSequentialCreate(b *testing.B) {
	ctx := context.Background()
	ctrl.SetLogger(logr.Discard())
	jobs := envCount(b, "MPIGUARD_SEQ_JOBS", 500)
	env, err := framework.Start(ctx, framework.Options{Name: "sequential", Replicas: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop(false) }()
	c := tenantClient(ctx, b, env)
	rt := gpuRuntime(ctx, b, env, "seq-8gpu")
	excludeBaselineNamespaces(ctx, b, env.Client)
	first, last := min(firstWindow, jobs/2), min(lastWindow, jobs/2)

	for range b.N {
		for _, run := range []struct {
			name string
			ns   string
		}{
			{"reserving", quotaNamespace(ctx, b, env, "1000000", "")},
			{"baseline", plainNamespace(ctx, b, env, baselineLabel)},
		} {
			var w *window
			stopProfile := func() {}
			for i := range jobs {
				if i == 0 {
					w = startWindow(ctx, b, env.Config, run.name+"-first")
				}
				if i == first {
					w.stop()
				}
				if i == jobs-last {
					w = startWindow(ctx, b, env.Config, run.name+"-last")
					if run.name == "reserving" {
						stopProfile = cpuProfile(b, os.Getenv("MPIGUARD_SEQ_CPUPROFILE"))
						go apiserverProfile(ctx, b, env.Config, os.Getenv("MPIGUARD_SEQ_APISERVER_PROFILE"))
					}
				}
				job := fixtures.TrainJob(run.ns, fmt.Sprintf("seq-%04d", i), rt.Name).NumNodes(2).NumProcPerNode(4).Obj()
				t0 := time.Now()
				must(b, c.Create(ctx, job))
				w.latencies = append(w.latencies, time.Since(t0))
			}
			w.stop()
			stopProfile()
			if run.name == "reserving" {
				reservationSize(ctx, b, env, run.ns, jobs)
			}
		}
	}
}

// The windows of BenchmarkSequentialCreate, in creates.
const (
	firstWindow = 20
	lastWindow  = 100
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
}

func startWindow(ctx context.Context, b *testing.B, cfg *rest.Config, name string) *window {
	return &window{ctx: ctx, b: b, cfg: cfg, name: name, requests: apiserverRequests(ctx, b, cfg), before: cpuNow(b)}
}

// stop reports the window's p50 latency and the CPU per create of the
// apiserver, etcd and this process.
func (w *window) stop() {
	w.b.ReportMetric(pct(w.latencies, 50).Seconds()*1e3, w.name+"-p50-ms")
	w.b.Logf("%s: %d creates, p50 %v", w.name, len(w.latencies), pct(w.latencies, 50))
	creates := float64(len(w.latencies))
	reportCPU(w.b, w.name, w.before, cpuNow(w.b), creates, "/create")
	reportRequests(w.b, w.name, w.requests, apiserverRequests(w.ctx, w.b, w.cfg), creates)
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
// by verb and resource, divided by per (those at least once in ten).
func reportRequests(b *testing.B, name string, before, after map[string]float64, per float64) {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if n := (after[k] - before[k]) / per; n >= 0.1 {
			lines = append(lines, fmt.Sprintf("%s %.1f", k, n))
		}
	}
	b.Logf("%s: apiserver requests (per %v): %s", name, per, strings.Join(lines, ", "))
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
// every create's write carries.
func reservationSize(ctx context.Context, b *testing.B, env *framework.Env, ns string, jobs int) {
	var res v1alpha1.QuotaReservation
	must(b, env.Client.Get(ctx, client.ObjectKey{Namespace: env.PolicyNamespace, Name: ns}, &res))
	js, err := json.Marshal(&res)
	must(b, err)
	b.ReportMetric(float64(len(js)), "reservation-bytes")
	b.Logf("QuotaReservation of %s with %d entries: %d bytes", ns, jobs, len(js))
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
