package admission

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
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
		token := metricsReaderToken(ctx)
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
			served := scrapeNames(ctx, g, token)
			var missing []string
			for name, readers := range read {
				// The others are the kube-apiserver's and kube-state-metrics'.
				if framework.ServedByManager(name) && !served[name] {
					missing = append(missing, fmt.Sprintf("%s (read by %s)", name, strings.Join(readers, ", ")))
				}
			}
			slices.Sort(missing)
			g.Expect(missing).To(BeEmpty(), "read by an alert or panel, not served")
		}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
	})
})

// metricsReaderToken returns a token of a ServiceAccount allowed to get
// /metrics (the manager asks the apiserver: TokenReview, SubjectAccessReview).
func metricsReaderToken(ctx context.Context) string {
	GinkgoHelper()
	ns := env.Namespace(ctx, nil)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}}
	Expect(env.Client.Create(ctx, sa)).To(Succeed())
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}}}
	for _, o := range []client.Object{role, binding} {
		Expect(env.Client.Create(ctx, o)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, o))).To(Succeed()) })
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	Expect(env.Client.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	return tr.Status.Token
}

// scrapeNames GETs the manager's /metrics and returns the names of its samples
// (a histogram's as name_bucket, name_sum and name_count).
func scrapeNames(ctx context.Context, g Gomega, token string) map[string]bool {
	addr := env.Replicas[0].MetricsAddr
	g.Expect(addr).NotTo(BeEmpty(), "the suite serves no metrics (framework.Options.Metrics)")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed, as shipped
	resp, err := c.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	names := map[string]bool{}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	g.Expect(s.Err()).NotTo(HaveOccurred())
	return names
}

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
