package load

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// burstJobs TrainJobs of jobGPUs GPUs each are created at once into one
// namespace whose quota holds half of them (MPIGUARD_BURST_JOBS: another
// number, for a quick run).
const burstJobs = 500

// BenchmarkBurstCreate is what a user experiences when a namespace receives a
// burst of submits: burstJobs TrainJobs created concurrently through the real
// apiserver, with mpiguard as shipped (two replicas behind one webhook
// endpoint), then the same burst with mpiguard's webhooks not registered (the
// baseline: mpiguard's controllers still act on the jobs), with both replicas
// stopped (the apiserver by itself) and, last, with floorWebhook in the
// replicas' place (the floor: one live quota read and one reservation write
// per batch, batched as mpiguard batches), in one run; mpiguard's garbage
// collector as shipped (asShipped). Every decision must be right, mpiguard's
// and the floor's: exactly half admitted, the rest denied by
// aggregate-quota (mpiguard's may also be told to retry). It reports
// mpiguard's p99 over the floor's (p99-ratio-floor). It also measures sequential
// creates with and without a quota, whose difference is what the reservation
// (a live quota read and one write to the apiserver) adds to one decision.
// Run once: go test -run '^$' -bench BurstCreate -benchtime 1x ./test/load/
// (MPIGUARD_BURST_CPUPROFILE=FILE profiles this process, both replicas, over
// the burst with mpiguard; MPIGUARD_BURST_APISERVER_PROFILE=FILE the
// kube-apiserver for 15 s from its start).
func BenchmarkBurstCreate(b *testing.B) {
	ctx := context.Background()
	ctrl.SetLogger(logr.Discard())
	replicas := 2 // as shipped; MPIGUARD_BURST_REPLICAS=1 compares one
	if v := os.Getenv("MPIGUARD_BURST_REPLICAS"); v != "" {
		var err error
		if replicas, err = strconv.Atoi(v); err != nil || replicas < 1 {
			b.Fatalf("MPIGUARD_BURST_REPLICAS=%q: want a number of replicas", v)
		}
	}
	n := envCount(b, "MPIGUARD_BURST_JOBS", burstJobs)
	fit := n / 2
	defer asShipped(b)()
	env, err := framework.Start(ctx, framework.Options{Name: "burst", Replicas: replicas})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop(false) }()
	c := tenantClient(ctx, b, env)
	rt := gpuRuntime(ctx, b, env, "burst-8gpu")

	excludeBaselineNamespaces(ctx, b, env.Client)
	for range b.N {
		quiesce(b)
		// The baseline first, so the mpiguard burst does not leave it a
		// busier apiserver (its admitted jobs are the same 250 objects).
		_, _, _, others, baseline := burst(ctx, c, quotaNamespace(ctx, b, env, fmt.Sprint(jobGPUs*fit), baselineLabel), rt.Name, n)
		if len(others) > 0 {
			b.Fatalf("baseline: %d errors (first: %v)", len(others), others[0])
		}
		ns := quotaNamespace(ctx, b, env, fmt.Sprint(jobGPUs*fit), "")
		// mpiguard's controllers act on the baseline's 500 jobs after their
		// creates return (a NetworkPolicy and an Event each, the audit of
		// the namespace): let that end first, or this burst carries it.
		quiesce(b)
		stopProfile := cpuProfile(b, os.Getenv("MPIGUARD_BURST_CPUPROFILE"))
		go apiserverProfile(ctx, b, env.Config, os.Getenv("MPIGUARD_BURST_APISERVER_PROFILE"))
		cpuBefore, requestsBefore := cpuNow(b), requestTimes(ctx, b, env.Config)
		admitted, denied, retry, others, withMPIGuard := burst(ctx, c, ns, rt.Name, n)
		stopProfile()
		reportCPU(b, "burst-mpiguard", cpuBefore, cpuNow(b), float64(n), "/create")
		requestsAfter := requestTimes(ctx, b, env.Config)
		reportRequests(b, "burst-mpiguard", requestsBefore, requestsAfter, float64(n))
		// Writes lost to the other replica: what a burst's runs differ by.
		for _, result := range []string{"ok", "conflict"} {
			k := "reservation writes " + result
			b.ReportMetric(requestsAfter[k]-requestsBefore[k], "reservation-writes-"+result)
		}
		b.Logf("burst of %d creates, %d fit: with mpiguard (%d replicas) p50 %v p99 %v; baseline p50 %v p99 %v",
			n, fit, replicas, pct(withMPIGuard, 50), pct(withMPIGuard, 99), pct(baseline, 50), pct(baseline, 99))
		// Right means: exactly as many admitted as fit, every other refused
		// (by the quota policy, or told to retry), none failed otherwise.
		if admitted != fit || denied+retry != n-fit || len(others) > 0 {
			b.Fatalf("with mpiguard: %d admitted, %d denied by aggregate-quota, %d told to retry, %d other errors (first: %v); want exactly %d admitted",
				admitted, denied, retry, len(others), first(others), fit)
		}
		b.ReportMetric(float64(retry), "told-to-retry")
		// The floor's entries are shaped as mpiguard wrote this burst's.
		template := &v1alpha1.QuotaReservation{}
		must(b, env.Client.Get(ctx, client.ObjectKey{Namespace: env.PolicyNamespace, Name: ns}, template))
		sequentialQuota := sequentialCreates(ctx, b, c, quotaNamespace(ctx, b, env, "1000000", ""), rt.Name, n)
		sequentialFree := sequentialCreates(ctx, b, c, plainNamespace(ctx, b, env, ""), rt.Name, n)
		sequentialBaseline := sequentialCreates(ctx, b, c, plainNamespace(ctx, b, env, baselineLabel), rt.Name, n)
		report(b, "burst-mpiguard", withMPIGuard)
		report(b, "burst-baseline", baseline)
		b.ReportMetric(pct(withMPIGuard, 50).Seconds()/pct(baseline, 50).Seconds(), "p50-ratio")
		b.ReportMetric(pct(withMPIGuard, 99).Seconds()/pct(baseline, 99).Seconds(), "p99-ratio")
		report(b, "seq-reserving", sequentialQuota)
		report(b, "seq-no-quota", sequentialFree)
		report(b, "seq-baseline", sequentialBaseline)
		b.ReportMetric((pct(sequentialQuota, 50)-pct(sequentialFree, 50)).Seconds()*1e3, "reservation-p50-added-ms")
		// What a user submitting one job at a time sees: with mpiguard (a
		// quota decision, the reservation written) over without it.
		b.ReportMetric(pct(sequentialQuota, 50).Seconds()/pct(sequentialBaseline, 50).Seconds(), "seq-p50-ratio")
		b.ReportMetric(pct(sequentialQuota, 99).Seconds()/pct(sequentialBaseline, 99).Seconds(), "seq-p99-ratio")
		b.Logf("sequential creates p50: %v reserving, %v without a quota, %v without mpiguard", pct(sequentialQuota, 50), pct(sequentialFree, 50), pct(sequentialBaseline, 50))

		// The apiserver by itself: in the baseline above mpiguard's
		// controllers still act on every job (its NetworkPolicy and Event,
		// the audit, two replicas' informers). Last, as the replicas stop.
		for _, r := range env.Replicas {
			must(b, r.Stop())
		}
		quiesce(b)
		_, _, _, others, alone := burst(ctx, c, quotaNamespace(ctx, b, env, fmt.Sprint(jobGPUs*fit), baselineLabel), rt.Name, n)
		if len(others) > 0 {
			b.Fatalf("apiserver alone: %d errors (first: %v)", len(others), others[0])
		}
		report(b, "burst-alone", alone)
		b.ReportMetric(pct(withMPIGuard, 99).Seconds()/pct(alone, 99).Seconds(), "p99-ratio-alone")
		b.Logf("burst, the apiserver by itself: p50 %v p99 %v", pct(alone, 50), pct(alone, 99))

		// The floor: what the reservation itself costs a burst, decided
		// in batches as mpiguard decides it, exact as mpiguard is.
		stopFloor := startFloor(ctx, b, env, template, jobGPUs)
		floorNS := quotaNamespace(ctx, b, env, fmt.Sprint(jobGPUs*fit), "")
		quiesce(b)
		cpuBefore = cpuNow(b)
		admitted, denied, retry, others, floor := burst(ctx, c, floorNS, rt.Name, n)
		reportCPU(b, "burst-floor", cpuBefore, cpuNow(b), float64(n), "/create")
		stopFloor()
		if admitted != fit || denied != n-fit || retry > 0 || len(others) > 0 {
			b.Fatalf("floor: %d admitted, %d denied by aggregate-quota, %d told to retry, %d other errors (first: %v); want exactly %d admitted",
				admitted, denied, retry, len(others), first(others), fit)
		}
		report(b, "burst-floor", floor)
		b.ReportMetric(pct(withMPIGuard, 99).Seconds()/pct(floor, 99).Seconds(), "p99-ratio-floor")
		b.Logf("burst of %d creates, p50 / p99: mpiguard %v / %v, floor %v / %v, unselected %v / %v, the apiserver by itself %v / %v; mpiguard's p99 %.2f× the floor's",
			n, pct(withMPIGuard, 50), pct(withMPIGuard, 99), pct(floor, 50), pct(floor, 99),
			pct(baseline, 50), pct(baseline, 99), pct(alone, 50), pct(alone, 99), ratio(pct(withMPIGuard, 99), pct(floor, 99)))
	}
}

// jobGPUs is what every job of BenchmarkBurstCreate and
// BenchmarkSequentialCreate charges the GPU quota: 2 Workers of gpuRuntime.
const jobGPUs = 2 * workerGPUs

// workerGPUs is the GPUs each Worker of gpuRuntime takes.
const workerGPUs = 4

// gpuRuntime creates the ClusterTrainingRuntime the load benchmarks submit
// to: an OpenMPI runtime whose Workers (replicated job node) take workerGPUs
// GPUs each and whose Launcher takes none, so a job of 2 nodes takes jobGPUs.
func gpuRuntime(ctx context.Context, b *testing.B, env *framework.Env, name string) *trainer.ClusterTrainingRuntime {
	rt := fixtures.MPIRuntime(name).
		Resources("node", fixtures.ResourceList("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", fmt.Sprint(workerGPUs)), fixtures.ResourceList("nvidia.com/gpu", fmt.Sprint(workerGPUs))).
		Resources("launcher", fixtures.ResourceList("cpu", "1", "memory", "2Gi"), nil).Cluster()
	must(b, env.Client.Create(ctx, rt))
	return rt
}

// tenantClient is a client of a user who submits TrainJobs and nothing else,
// as tenants do: not a cluster admin, whose requests the apiserver's API
// Priority and Fairness exempts. A tenant's burst is queued and shaped by APF
// (and retried by client-go on 429), in the baseline and with mpiguard alike;
// an exempt burst would measure an apiserver no tenant can reach.
func tenantClient(ctx context.Context, b *testing.B, env *framework.Env) client.Client {
	return tenantClients(ctx, b, env, 1)[0]
}

// tenantClients are the clients of n such users (tenantClient), each with
// its own certificate, so its own connection and its own APF flow.
func tenantClients(ctx context.Context, b *testing.B, env *framework.Env, n int) []client.Client {
	const group = "mpiguard-burst-tenants"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: group},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"trainer.kubeflow.org"}, Resources: []string{"trainjobs"}, Verbs: []string{"create", "get", "list"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: group},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: group},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: group}}}
	must(b, env.Client.Create(ctx, role))
	must(b, env.Client.Create(ctx, binding))
	out := make([]client.Client, n)
	for i := range out {
		name := "burst-tenant"
		if i > 0 {
			name = fmt.Sprintf("burst-tenant-%d", i)
		}
		user, err := env.Testenv.AddUser(envtest.User{Name: name, Groups: []string{group}}, nil)
		must(b, err)
		cfg := user.Config()
		cfg.QPS = -1 // no client-side rate limit: the burst reaches the apiserver at once
		out[i], err = client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
		must(b, err)
	}
	return out
}

// baselineLabel marks namespaces the webhooks leave alone: the baseline.
const baselineLabel = "mpiguard.io/benchmark-baseline"

// excludeBaselineNamespaces scopes every installed webhook to namespaces
// without baselineLabel, so one run measures creates with and without mpiguard.
func excludeBaselineNamespaces(ctx context.Context, b *testing.B, c client.Client) {
	sel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: baselineLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}}
	var vs admissionregistrationv1.ValidatingWebhookConfigurationList
	must(b, c.List(ctx, &vs))
	for i := range vs.Items {
		for j := range vs.Items[i].Webhooks {
			vs.Items[i].Webhooks[j].NamespaceSelector = sel
		}
		must(b, c.Update(ctx, &vs.Items[i]))
	}
	var ms admissionregistrationv1.MutatingWebhookConfigurationList
	must(b, c.List(ctx, &ms))
	for i := range ms.Items {
		for j := range ms.Items[i].Webhooks {
			ms.Items[i].Webhooks[j].NamespaceSelector = sel
		}
		must(b, c.Update(ctx, &ms.Items[i]))
	}
	time.Sleep(2 * time.Second) // the apiserver's webhook configuration informer
}

// burst creates n TrainJobs of jobGPUs GPUs at once and returns how many
// were admitted, denied by aggregate-quota, told to retry, failed otherwise,
// and each create's latency.
func burst(ctx context.Context, c client.Client, ns, runtime string, n int) (admitted, denied, retry int, others []error, latencies []time.Duration) {
	jobs := make([]*trainer.TrainJob, n)
	for i := range jobs {
		jobs[i] = fixtures.TrainJob(ns, fmt.Sprintf("burst-%03d", i), runtime).NumNodes(2).NumProcPerNode(workerGPUs).Obj()
	}
	return createAtOnce(ctx, []client.Client{c}, jobs)
}

// createAtOnce creates jobs at once, job i with clients[i%len(clients)], and
// returns how many were admitted, denied by aggregate-quota, told to retry
// by quota-reservation, failed otherwise, and each create's latency.
func createAtOnce(ctx context.Context, clients []client.Client, jobs []*trainer.TrainJob) (admitted, denied, retry int, others []error, latencies []time.Duration) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		start = make(chan struct{})
	)
	for i, job := range jobs {
		c := clients[i%len(clients)]
		wg.Go(func() {
			<-start
			t0 := time.Now()
			err := c.Create(ctx, job)
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			latencies = append(latencies, d)
			switch {
			case err == nil:
				admitted++
			case strings.Contains(err.Error(), "[aggregate-quota]"):
				denied++
			case strings.Contains(err.Error(), "[quota-reservation]"):
				// Its reservation lost every race within its budget: refused,
				// nothing reserved, the user is told to retry.
				retry++
			default:
				others = append(others, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return admitted, denied, retry, others, latencies
}

// sequentialCreates creates n TrainJobs one after the other (BenchmarkBurstCreate's
// n: 500, enough for a p99 that is not the single slowest create).
func sequentialCreates(ctx context.Context, b *testing.B, c client.Client, ns, runtime string, n int) []time.Duration {
	out := make([]time.Duration, 0, n)
	for i := range cap(out) {
		job := fixtures.TrainJob(ns, fmt.Sprintf("seq-%03d", i), runtime).NumNodes(2).NumProcPerNode(workerGPUs).Obj()
		t0 := time.Now()
		must(b, c.Create(ctx, job))
		out = append(out, time.Since(t0))
	}
	return out
}

func quotaNamespace(ctx context.Context, b *testing.B, env *framework.Env, gpus, label string) string {
	ns := plainNamespace(ctx, b, env, label)
	q := fixtures.ResourceQuota(ns, "gpus", "requests.nvidia.com/gpu", gpus)
	must(b, env.Client.Create(ctx, q))
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: fixtures.ResourceList("requests.nvidia.com/gpu", "0")}
	must(b, env.Client.Status().Update(ctx, q))
	return ns
}

// plainNamespace creates a namespace, labelled with label when it is not "".
func plainNamespace(ctx context.Context, b *testing.B, env *framework.Env, label string) string {
	var labels map[string]string
	if label != "" {
		labels = map[string]string{label: "true"}
	}
	ns, err := env.NewNamespace(ctx, labels)
	must(b, err)
	return ns.Name
}

func report(b *testing.B, name string, ds []time.Duration) {
	b.ReportMetric(pct(ds, 50).Seconds()*1e3, name+"-p50-ms")
	b.ReportMetric(pct(ds, 99).Seconds()*1e3, name+"-p99-ms")
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, len(s)*p/100)]
}

func first(errs []error) error {
	if len(errs) == 0 {
		return errors.New("none")
	}
	return errs[0]
}
