package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
	"github.com/mpiguard/mpiguard/webhooks/trainjob"
)

// The names mpiguard's alerts (config/prometheus/rule.yaml) and dashboard
// (config/grafana/mpiguard.json) read must be in what a running manager
// serves: a renamed metric would otherwise silence an alert or empty a panel
// with every test green. A labelled series is served only once observed, so
// the spec first makes mpiguard do each thing they watch.
var _ = Describe("the metrics alerts and the dashboard read", func() {
	It("are all in a scrape of the running manager's /metrics once it has decided, reserved, refused, audited and tested a runtime", func(ctx context.Context) {
		read, err := framework.MonitoredMetrics()
		Expect(err).NotTo(HaveOccurred())
		token := env.MetricsReaderToken(ctx)
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("metrics-"+ns, "4"))
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "8"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))

		By("admitting a TrainJob (a decision, a reservation written and held) and denying one (quota)")
		admitted(ctx, fixtures.TrainJob(ns, "fits", rt.Name).NumNodes(2).NumProcPerNode(4).Obj())
		Expect(denial(ctx, fixtures.TrainJob(ns, "too-big", rt.Name).NumNodes(1).NumProcPerNode(4).Obj())).To(ContainSubstring("free"))

		By("refusing a create past --max-unconfirmed-reservations (reviews of creates whose TrainJob never appears)")
		refuseUnconfirmed(ctx, rt.Name)

		By("refusing a create into a namespace whose QuotaReservation is full")
		refuseFull(ctx, rt.Name)

		By("auditing: a stored two-Worker job against a policy tightened to one Worker")
		tightenMaxWorkers(ctx, ns, 1)

		By("finishing a RuntimeTest (its runtime does not exist: RuntimeNotFound)")
		Expect(env.Client.Create(ctx, &quotav1alpha1.RuntimeTest{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "smoke"},
			Spec:       quotav1alpha1.RuntimeTestSpec{RuntimeRef: quotav1alpha1.RuntimeRef{Name: "no-such-runtime-" + ns}, Workers: 1, SlotsPerWorker: 1},
		})).To(Succeed())

		By("scraping /metrics until every metric read is served")
		Eventually(func(g Gomega) {
			served := env.ScrapeMetricNames(ctx, g, token)
			var missing []string
			for name, readers := range read {
				// The others are the kube-apiserver's and kube-state-metrics'.
				// The follower's job metrics need pods that run and end: the
				// follow suite's scrape reads them (framework.ServedByFollower).
				if framework.ServedByManager(name) && !framework.ServedByFollower(name) && !served[name] {
					missing = append(missing, fmt.Sprintf("%s (read by %s)", name, strings.Join(readers, ", ")))
				}
			}
			slices.Sort(missing)
			g.Expect(missing).To(BeEmpty(), "read by an alert or panel, not served")
		}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
	})
})

// refuseUnconfirmed sends reviews of creates in a fresh namespace until one
// is refused for the reservations its namespace holds on trust: no TrainJob
// follows them, as after creates the apiserver refused after mpiguard.
func refuseUnconfirmed(ctx context.Context, runtime string) {
	GinkgoHelper()
	ns := env.Namespace(ctx, nil)
	createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "1000"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
	n := 0
	// Entries go after the grace (reservationGrace): a burst slowed down by
	// a busy machine may not reach the cap; the next one does.
	Eventually(func(g Gomega) string {
		for range maxUnconfirmed + 1 {
			n++
			// As the mutating webhook leaves it (reviews skip it).
			job := fixtures.TrainJob(ns, fmt.Sprintf("never-%03d", n), runtime).NumNodes(1).NumProcPerNode(4).ActiveDeadlineSeconds(600).Obj()
			job.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", n))
			req, err := framework.TrainJobReview(admissionv1.Create, job, nil, "alice")
			g.Expect(err).NotTo(HaveOccurred())
			resp, err := framework.PostReview(env.Replicas[0].Addr, trainjob.ValidatePath, req, nil)
			g.Expect(err).NotTo(HaveOccurred())
			if !resp.Allowed {
				if msg := resp.Result.Message; strings.Contains(msg, "quota reservations of TrainJobs admitted but not yet created") {
					return msg
				}
				StopTrying("a review refused for another reason").Attach("answer", resp.Result).Now()
			}
		}
		return "no review refused"
	}).WithContext(ctx).WithTimeout(60 * time.Second).Should(ContainSubstring("quota reservations of TrainJobs admitted but not yet created"))
}

// tightenMaxWorkers stores a job of two Workers in ns and loads a policy
// allowing at most limit Workers, until the audit counts the job as a
// violation; the policy goes again after the spec, once admission no
// longer applies it.
func tightenMaxWorkers(ctx context.Context, ns string, limit int) {
	GinkgoHelper()
	rt := env.CreateClusterRuntime(ctx, fixtures.MPIRuntime("audit-"+ns).Cluster())
	admitted(ctx, fixtures.TrainJob(ns, "two-workers", rt.Name).NumNodes(2).Obj())
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: "metrics-max-workers", Labels: map[string]string{"mpiguard.io/policy": "rego"}},
		Data:       map[string]string{"max_workers.rego": fixtures.MaxWorkersPolicy(limit)},
	}
	Expect(env.Client.Create(ctx, cm)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, cm))).To(Succeed())
		// Later specs must not meet the tightened policy.
		Eventually(func() error {
			return env.Client.Create(ctx, fixtures.TrainJob(ns, "after", rt.Name).NumNodes(2).Obj(), client.DryRunAll)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})
	Eventually(func() error {
		return env.Client.Create(ctx, fixtures.TrainJob(ns, "denied", rt.Name).NumNodes(2).Obj(), client.DryRunAll)
	}).WithContext(ctx).WithTimeout(30*time.Second).Should(MatchError(ContainSubstring(fixtures.MaxWorkersPolicyName)), "the policy never loaded")
}

// refuseFull fills a fresh namespace's QuotaReservation with
// store.MaxEntries entries held on trust (for an hour, of jobs that
// never appear and charge nothing) and expects the next create refused.
func refuseFull(ctx context.Context, runtime string) {
	GinkgoHelper()
	ns := env.Namespace(ctx, nil)
	createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "1000"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
	now := metav1.Now()
	res := &quotav1alpha1.QuotaReservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: ns},
		Spec:       quotav1alpha1.QuotaReservationSpec{Namespace: ns},
	}
	for i := range store.MaxEntries {
		res.Spec.Entries = append(res.Spec.Entries, quotav1alpha1.ReservationEntry{
			TrainJob: fmt.Sprintf("held-%04d", i), UID: types.UID(fmt.Sprintf("00000000-0000-0000-0001-%012d", i)),
			Operation: quotav1alpha1.OperationCreate, AdmittedAt: now, HoldUntil: metav1.NewTime(now.Add(time.Hour)),
			Parts: []quotav1alpha1.ReservedPart{{ReplicatedJob: "node", Pods: 1}},
		})
	}
	Expect(env.Client.Create(ctx, res)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, res))).To(Succeed()) })
	Expect(denial(ctx, fixtures.TrainJob(ns, "one-too-many", runtime).NumNodes(1).NumProcPerNode(4).Obj())).To(
		ContainSubstring(fmt.Sprintf("already holds %d quota reservations", store.MaxEntries)))
}
