package rbac

import (
	"context"
	"fmt"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// A replacement max-duration policy that compliance might push: a hard
// 1-hour limit with its own message.
const oneHourPolicy = `package mpiguard.policies.max_duration

deny contains {"field": "spec.activeDeadlineSeconds", "msg": msg} if {
	input.trainJob.activeDeadlineSeconds > 3600
	msg := sprintf("compliance: TrainJobs may run at most 1 hour, this one asks for %d seconds; set spec.activeDeadlineSeconds to 3600 or less", [input.trainJob.activeDeadlineSeconds])
}
`

// A tenant's attempt to plant a policy from its own namespace: were it
// loaded, every TrainJob would be denied.
const tenantPolicy = `package mpiguard.policies.max_duration

deny contains {"field": "spec", "msg": "planted by a tenant"} if { true }
`

var _ = Describe("mpiguard under exactly the RBAC config/default ships", func() {
	It("syncs every replica's cache and publishes the curated runtimes", func(ctx context.Context) {
		for _, r := range env.Replicas {
			// A list or watch the roles do not grant keeps a cache from syncing.
			Expect(r.Manager.GetCache().WaitForCacheSync(ctx)).To(BeTrue(), "the cache of the replica at %s did not sync", r.Addr)
		}
		By("publishing the curated ClusterTrainingRuntimes (server-side apply: patch, create)")
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Name: "mpiguard-openmpi-v2"}, &trainer.ClusterTrainingRuntime{})
		}).WithTimeout(timeout).Should(Succeed())
	})

	It("loads a policy ConfigMap of its own namespace, judges TrainJobs by it and reserves quota", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := env.CreateClusterRuntime(ctx, fixtures.GPUWorkersRuntime("rbac-"+ns, "4").Cluster())

		By("writing the policy status annotation (patch ConfigMaps in mpiguard's namespace)")
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: "compliance-max-duration", Labels: map[string]string{"mpiguard.io/policy": "rego"}},
			Data:       map[string]string{"max_duration.rego": oneHourPolicy},
		}
		Expect(env.Client.Create(ctx, cm)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, cm))).To(Succeed()) })
		Eventually(func(g Gomega) string {
			var got corev1.ConfigMap
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got)).To(Succeed())
			return got.Annotations["mpiguard.io/policy-status"]
		}).WithTimeout(timeout).Should(HavePrefix("loaded: "))

		By("denying through the webhook with the loaded policy, on every replica")
		// The status is the leader's; every replica loads from its own
		// informer, so the other may take a moment longer: retry until four
		// attempts in a row (spread round-robin over the replicas) are denied.
		round := 0
		Eventually(func(g Gomega) {
			round++
			for i := range 4 {
				err := env.Client.Create(ctx, fixtures.TrainJob(ns, fmt.Sprintf("two-hours-%d-%d", round, i), rt.Name).NumNodes(1).ActiveDeadlineSeconds(7200).Obj())
				g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "attempt %d: want a webhook denial, got %v", i, err)
				g.Expect(err.Error()).To(ContainSubstring("compliance: TrainJobs may run at most 1 hour"))
			}
		}).WithTimeout(timeout).Should(Succeed())

		By("admitting a compliant job and reserving its quota (QuotaReservations: the Role)")
		// A namespace of its own: a job a lagging replica admitted above
		// would hold GPUs here.
		ns = env.Namespace(ctx, nil)
		env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "16"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "first", rt.Name).NumNodes(2).NumProcPerNode(4).ActiveDeadlineSeconds(600).Obj())).To(Succeed())
		Expect(env.ReservedJobs(ctx, ns)).To(Equal([]string{"first"}))
		err := env.Client.Create(ctx, fixtures.TrainJob(ns, "second", rt.Name).NumNodes(3).NumProcPerNode(4).ActiveDeadlineSeconds(600).Obj())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want a quota denial, got %v", err)
		Expect(err.Error()).To(ContainSubstring("has 8 of 16 free"))
	})

	It("runs a RuntimeTest: creates, owns and deletes its TrainJob and writes the verdict", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := &api.RuntimeTest{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "smoke"},
			// No Trainer controller runs here: no pods appear, and the
			// verdict is the timeout's, after which the TrainJob is deleted.
			Spec: api.RuntimeTestSpec{RuntimeRef: api.RuntimeRef{Name: "mpiguard-openmpi-v2"}, Workers: 1, SlotsPerWorker: 1, TimeoutSeconds: 10},
		}
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Name: rt.Spec.RuntimeRef.Name}, &trainer.ClusterTrainingRuntime{})
		}).WithTimeout(timeout).Should(Succeed())
		Expect(env.Client.Create(ctx, rt)).To(Succeed())

		By("creating the smoke-test TrainJob with a controller reference (runtimetests/finalizers)")
		var job trainer.TrainJob
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "smoke-smoke"}, &job)
		}).WithTimeout(timeout).Should(Succeed())
		Expect(metav1.IsControlledBy(&job, rt)).To(BeTrue())

		By("writing the verdict (runtimetests/status) and deleting the TrainJob (trainjobs delete)")
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rt), rt)).To(Succeed())
			g.Expect(rt.Status.Phase).To(Equal(api.PhaseFailed))
			g.Expect(rt.Status.TrainJobDeleted).To(BeTrue())
		}).WithTimeout(60 * time.Second).Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(&job), &trainer.TrainJob{}))
		}).WithTimeout(timeout).Should(BeTrue())
	})

	It("keeps NetworkPolicies: reads jobs, runtimes and namespaces, applies, repairs and deletes policies, and records events", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := env.CreateClusterRuntime(ctx, fixtures.MPIRuntime("np-rbac-"+ns).Cluster())
		job := fixtures.TrainJob(ns, "pi", rt.Name).Obj()
		Expect(env.Client.Create(ctx, job)).To(Succeed())

		key := client.ObjectKey{Namespace: ns, Name: "pi"}
		By("applying the policy (get/list/watch TrainJobs, runtimes, Namespaces; patch NetworkPolicies)")
		var first networkingv1.NetworkPolicy
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, key, &first)).To(Succeed())
			g.Expect(first.Spec).To(BeComparableTo(fixtures.IngressIsolatedNetworkPolicySpec("pi")))
			g.Expect(first.OwnerReferences).To(HaveLen(1))
			g.Expect(first.OwnerReferences[0].UID).To(Equal(job.UID))
		}).WithTimeout(timeout).Should(Succeed())

		By("repairing a deleted policy (watch NetworkPolicies)")
		Expect(env.Client.Delete(ctx, &first)).To(Succeed())
		Eventually(func(g Gomega) {
			var p networkingv1.NetworkPolicy
			g.Expect(env.Client.Get(ctx, key, &p)).To(Succeed())
			g.Expect(p.UID).NotTo(Equal(first.UID))
		}).WithTimeout(timeout).Should(Succeed())

		By("deleting the policy when the namespace switches to off (delete NetworkPolicies)")
		var n corev1.Namespace
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, &n)).To(Succeed())
		patch := client.MergeFrom(n.DeepCopy())
		n.Annotations = map[string]string{"mpiguard.io/network-policy": "off"}
		Expect(env.Client.Patch(ctx, &n, patch)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, key, &networkingv1.NetworkPolicy{}))
		}).WithTimeout(timeout).Should(BeTrue())

		By("recording events on the TrainJob (create events.k8s.io)")
		Eventually(func(g Gomega) []string {
			var list eventsv1.EventList
			g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range list.Items {
				if e.Regarding.Name == "pi" && e.ReportingController == "mpiguard-networkpolicies" {
					reasons = append(reasons, e.Reason)
				}
			}
			return reasons
		}).WithTimeout(timeout).Should(ContainElements("NetworkPolicyCreated", "NetworkPolicyRepaired", "NetworkPolicyDeleted"))
	})

	It("cannot write or list ConfigMaps outside its own namespace", func(ctx context.Context) {
		user := "system:serviceaccount:" + mpiguard.Namespace + ":" + mpiguard.Name
		allowed := func(verb, namespace string) bool {
			GinkgoHelper()
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + mpiguard.Namespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: namespace, Verb: verb, Resource: "configmaps",
				},
			}}
			Expect(env.Client.Create(ctx, sar)).To(Succeed())
			return sar.Status.Allowed
		}
		Expect(allowed("patch", "kube-system")).To(BeFalse(), "mpiguard's identity may patch ConfigMaps in kube-system")
		Expect(allowed("update", "kube-system")).To(BeFalse(), "mpiguard's identity may update ConfigMaps in kube-system")
		Expect(allowed("list", "")).To(BeFalse(), "mpiguard's identity may list every ConfigMap of the cluster")
		Expect(allowed("watch", "")).To(BeFalse(), "mpiguard's identity may watch every ConfigMap of the cluster")
		Expect(allowed("patch", env.PolicyNamespace)).To(BeTrue(), "mpiguard must patch the policy ConfigMaps of its namespace (status annotation)")

		By("a real attempt with mpiguard's own client is refused")
		victim := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", GenerateName: "rbac-victim-"}, Data: map[string]string{"k": "v"}}
		Expect(env.Client.Create(ctx, victim)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, victim))).To(Succeed()) })
		mine := victim.DeepCopy()
		patch := client.MergeFrom(mine.DeepCopy())
		mine.Data["k"] = "overwritten by mpiguard"
		err := env.Manager.GetClient().Patch(ctx, mine, patch)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "patching ConfigMap kube-system/%s as mpiguard: want Forbidden, got %v", victim.Name, err)
	})

	It("neither caches nor loads a tenant's labelled ConfigMap", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		planted := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "planted", Labels: map[string]string{"mpiguard.io/policy": "rego"}},
			Data:       map[string]string{"max_duration.rego": tenantPolicy},
		}
		Expect(env.Client.Create(ctx, planted)).To(Succeed())
		// Written after the tenant's: once mpiguard's cache has it, it would
		// have had the tenant's, had it watched the tenant's namespace.
		marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: "rbac-marker-" + ns, Labels: map[string]string{"mpiguard.io/policy": "parameters"}},
			Data: map[string]string{"parameters.yaml": "{}\n"}}
		Expect(env.Client.Create(ctx, marker)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, marker))).To(Succeed()) })
		for _, r := range env.Replicas {
			Eventually(func() error {
				return r.Manager.GetCache().Get(ctx, client.ObjectKeyFromObject(marker), &corev1.ConfigMap{})
			}).WithTimeout(timeout).Should(Succeed(), "replica at %s never cached its own namespace's ConfigMap", r.Addr)
			var all corev1.ConfigMapList
			Expect(r.Manager.GetCache().List(ctx, &all)).To(Succeed())
			for _, cm := range all.Items {
				Expect(cm.Namespace).To(Equal(env.PolicyNamespace), "replica at %s caches ConfigMap %s/%s: a tenant can fill mpiguard's memory", r.Addr, cm.Namespace, cm.Name)
			}
			var tenant corev1.ConfigMapList
			err := r.Manager.GetCache().List(ctx, &tenant, client.InNamespace(ns))
			if err == nil {
				Expect(tenant.Items).To(BeEmpty(), "replica at %s caches the tenant's ConfigMaps", r.Addr)
			}
		}

		By("the tenant's policy is not loaded: a TrainJob is still admitted, the ConfigMap gets no status")
		rt := env.CreateClusterRuntime(ctx, fixtures.MPIRuntime("tenant-"+ns).Cluster())
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "pi", rt.Name).NumNodes(1).Obj())).To(Succeed())
		Consistently(func(g Gomega) map[string]string {
			var got corev1.ConfigMap
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(planted), &got)).To(Succeed())
			return got.Annotations
		}).WithTimeout(2 * time.Second).ShouldNot(HaveKey("mpiguard.io/policy-status"))
	})
})
