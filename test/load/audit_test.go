package load

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// BenchmarkAudit is a full audit as a compliance team meets it: TrainJobs
// that have not finished (suspended, waiting for Kueue or their turn, so
// each is judged as the resume that would start it, quotas included)
// spread over namespaces, one in ten violating a policy pushed at run time
// (fixtures.MaxWorkersPolicy(2): one job in ten has 3 Workers).
// It measures, through the real apiserver with mpiguard as it runs (the
// audit controller on the leader, reports written as openreports.io
// Reports), the time from the policy's ConfigMap to every namespace's
// violations counted, the Go heap the audit adds on top of the manager at
// rest, and that a change in one namespace re-audits only that namespace.
// MPIGUARD_AUDIT_JOBS (10000) and MPIGUARD_AUDIT_NAMESPACES (100) size it;
// MPIGUARD_AUDIT_CPUPROFILE=FILE profiles the full audit (this process),
// MPIGUARD_AUDIT_APISERVER_PROFILE=FILE the kube-apiserver over its first
// 15 s. It reports the CPU the apiserver, etcd and this process spent in the
// full audit and the apiserver's requests. mpiguard's garbage collector runs
// as shipped (asShipped).
// Run once: go test -run '^$' -bench Audit -benchtime 1x -timeout 60m ./test/load/
func BenchmarkAudit(b *testing.B) {
	ctx := context.Background()
	ctrl.SetLogger(logr.Discard())
	defer asShipped(b)()
	jobs, namespaces := envCount(b, "MPIGUARD_AUDIT_JOBS", 10000), envCount(b, "MPIGUARD_AUDIT_NAMESPACES", 100)
	perNS := jobs / namespaces
	components := app.DefaultOptions()
	// Only what a full audit exercises: the admission pipeline (the audit
	// shares its engine) and the audit controller. The interval is out of
	// the way: audits here come from changes.
	components.Audit.Interval = time.Hour
	components.RuntimePublisher.Enabled = false
	components.RuntimeTests.Enabled = false
	components.NetworkPolicies.Enabled = false
	components.KueueAdmissionCheck.Enabled = false
	// One replica: the audit runs on the leader only, and the heap measured
	// is then one manager's.
	env, err := framework.Start(ctx, framework.Options{Name: "audit-bench", Components: &components})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop(false) }()
	rt := fixtures.MPIRuntime("audit-bench").Cluster()
	must(b, env.Client.Create(ctx, rt))

	start := time.Now()
	names := make([]string, namespaces)
	for i := range names {
		ns, err := env.NewNamespace(ctx, nil)
		must(b, err)
		names[i] = ns.Name
		// Status as the quota controller would write it (none runs here).
		q := fixtures.ResourceQuota(ns.Name, "team", "pods", fmt.Sprint(4*perNS))
		must(b, env.Client.Create(ctx, q))
		q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: fixtures.ResourceList("pods", "0")}
		must(b, env.Client.Status().Update(ctx, q))
	}
	createJobs(ctx, b, env, names, perNS, rt.Name)
	b.Logf("created %d suspended TrainJobs in %d namespaces through the webhooks in %v", perNS*namespaces, namespaces, time.Since(start).Round(time.Second))
	// The creations trigger audits; wait until they are done (every
	// namespace audited since its last job was created) before measuring.
	settle(b, namespaces)
	heapAtRest := heapAfterGC()

	for range b.N {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: "bench-compliance", Labels: map[string]string{"mpiguard.io/policy": "rego"}},
			Data:       map[string]string{"max_workers.rego": fixtures.MaxWorkersPolicy(2)},
		}
		peak := sampleHeap()
		stopProfile := cpuProfile(b, os.Getenv("MPIGUARD_AUDIT_CPUPROFILE"))
		go apiserverProfile(ctx, b, env.Config, os.Getenv("MPIGUARD_AUDIT_APISERVER_PROFILE"))
		cpuBefore, requestsBefore := cpuNow(b), apiserverRequests(ctx, b, env.Config)
		start := time.Now()
		must(b, env.Client.Create(ctx, cm))
		wantViolations := float64(namespaces * (perNS / 10))
		for violationsOf(fixtures.MaxWorkersPolicyName) < wantViolations {
			time.Sleep(100 * time.Millisecond)
		}
		took := time.Since(start)
		stopProfile()
		reportCPU(b, "full-audit", cpuBefore, cpuNow(b), 1, "")
		reportRequests(b, "full audit", requestsBefore, apiserverRequests(ctx, b, env.Config), 1)
		peakHeap := peak()
		retained := heapAfterGC()
		b.ReportMetric(took.Seconds(), "full-audit-s")
		mib := func(after uint64) float64 { return (float64(after) - float64(heapAtRest)) / (1 << 20) }
		b.ReportMetric(mib(peakHeap), "added-peak-MiB")
		b.Logf("full audit after a policy change: %d TrainJobs in %d namespaces, %v violations reported in %v; heap at rest %d MiB, peak during the audit %+.0f MiB, retained after %+.0f MiB",
			perNS*namespaces, namespaces, wantViolations, took.Round(100*time.Millisecond), heapAtRest>>20, mib(peakHeap), mib(retained))

		// Incremental: one namespace's quota changes; only that namespace
		// is audited again.
		audits := namespaceAudits()
		var q corev1.ResourceQuota
		must(b, env.Client.Get(ctx, client.ObjectKey{Namespace: names[0], Name: "team"}, &q))
		q.Spec.Hard[corev1.ResourcePods] = *resource.NewQuantity(int64(4*perNS-1), resource.DecimalSI)
		must(b, env.Client.Update(ctx, &q))
		// Synced as the quota controller (not running here) would: a quota
		// whose status.hard lags its spec is not decided against, and the
		// namespace's audit would fail and be retried until it is.
		q.Status.Hard = q.Spec.Hard
		must(b, env.Client.Status().Update(ctx, &q))
		deadline := time.Now().Add(components.Audit.Debounce + 30*time.Second)
		for namespaceAudits() == audits && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		// Anything else queued would run within the debounce: wait it out.
		time.Sleep(2*components.Audit.Debounce + time.Second)
		if n := namespaceAudits() - audits; n != 1 {
			b.Fatalf("a quota change in one namespace caused %d namespace audits, want 1", n)
		}
		must(b, env.Client.Delete(ctx, cm))
	}
}

// createJobs creates perNS suspended TrainJobs in each namespace through the
// webhooks, concurrently; one in ten has 3 Workers, the rest 1.
func createJobs(ctx context.Context, b *testing.B, env *framework.Env, namespaces []string, perNS int, runtime string) {
	snapshot := snapshotOf(ctx, b, env, runtime)
	type job struct {
		ns      string
		i       int
		workers int32
	}
	work := make(chan job)
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				tj := fixtures.TrainJob(j.ns, fmt.Sprintf("job-%04d", j.i), runtime).NumNodes(j.workers).Suspend(true).Obj()
				if err := env.Client.Create(ctx, tj); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
				if snapshot == nil {
					continue
				}
				if err := env.Client.Create(ctx, snapshot(tj)); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	for _, ns := range namespaces {
		for i := range perNS {
			workers := int32(1)
			if i%10 == 0 {
				workers = 3
			}
			work <- job{ns, i, workers}
		}
	}
	close(work)
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatalf("creating the TrainJobs: %v", *err)
	}
}

// snapshotOf returns what makes the runtime snapshot ConfigMap the
// Trainer's first reconcile writes for a job of runtime (none runs here; in a
// cluster every job that was reconciled once has one, a suspended one
// included, and audit judges a waiting job on it): owned by the job, the
// runtime as YAML. nil with MPIGUARD_AUDIT_SNAPSHOTS=0 (jobs the Trainer has
// not reconciled yet).
func snapshotOf(ctx context.Context, b *testing.B, env *framework.Env, runtime string) func(*trainer.TrainJob) *corev1.ConfigMap {
	if os.Getenv("MPIGUARD_AUDIT_SNAPSHOTS") == "0" {
		return nil
	}
	var rt trainer.ClusterTrainingRuntime
	must(b, env.Client.Get(ctx, client.ObjectKey{Name: runtime}, &rt))
	rt.SetGroupVersionKind(trainer.GroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind))
	data, err := yaml.Marshal(&rt)
	must(b, err)
	return func(job *trainer.TrainJob) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: pipeline.SnapshotName(job), OwnerReferences: []metav1.OwnerReference{{
				APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind, Name: job.Name, UID: job.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}}},
			Data: map[string]string{"runtime": string(data)},
		}
	}
}

// settle waits until the audits the creations triggered are over: every
// namespace audited and no audit for a few debounce periods.
func settle(b *testing.B, namespaces int) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	last, quietSince := namespaceAudits(), time.Now()
	for time.Since(quietSince) < 10*time.Second || last < uint64(namespaces) {
		if time.Now().After(deadline) {
			b.Fatalf("audits did not settle: %d namespace audits so far", last)
		}
		time.Sleep(500 * time.Millisecond)
		if n := namespaceAudits(); n != last {
			last, quietSince = n, time.Now()
		}
	}
}

// namespaceAudits is how many namespace audits have finished
// (mpiguard_audit_duration_seconds{scope="namespace"} observations).
func namespaceAudits() uint64 {
	var n uint64
	eachMetric("mpiguard_audit_duration_seconds", func(m *dto.Metric) {
		if labelValue(m, "scope") == "namespace" {
			n += m.GetHistogram().GetSampleCount()
		}
	})
	return n
}

// violationsOf sums mpiguard_audit_violations of a policy over namespaces.
func violationsOf(policy string) float64 {
	var sum float64
	eachMetric("mpiguard_audit_violations", func(m *dto.Metric) {
		if labelValue(m, "policy") == policy {
			sum += m.GetGauge().GetValue()
		}
	})
	return sum
}

func eachMetric(name string, f func(*dto.Metric)) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		panic(err)
	}
	for _, fam := range families {
		if fam.GetName() == name {
			for _, m := range fam.GetMetric() {
				f(m)
			}
		}
	}
}

// heapAfterGC is the live heap: what the process keeps.
func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// sampleHeap samples the heap's objects every 20 ms until the returned
// function is called, which returns the highest reading.
func sampleHeap() func() uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		defer close(stopped)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}

// cpuProfile profiles the process into path (none when empty) until the
// returned function is called: the full audit alone, not the setup.
func cpuProfile(b *testing.B, path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	must(b, err)
	must(b, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		must(b, f.Close())
	}
}

func envCount(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
