package rbac

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

const timeout = 30 * time.Second

var _ = Describe("the NetworkPolicy controller under the generated ClusterRole", func() {
	It("reads jobs, runtimes and namespaces, applies, repairs and deletes policies, and records events", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := fixtures.MPIRuntime("np-rbac-" + ns).Cluster()
		Expect(env.Client.Create(ctx, rt)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, rt)).To(Succeed()) })
		job := fixtures.TrainJob(ns, "pi", rt.Name).Obj()
		Expect(env.Client.Create(ctx, job)).To(Succeed())

		key := client.ObjectKey{Namespace: ns, Name: "pi"}
		By("applying the policy (get/list/watch TrainJobs, runtimes, Namespaces; patch NetworkPolicies)")
		var first networkingv1.NetworkPolicy
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, key, &first)).To(Succeed())
			g.Expect(first.Spec).To(BeComparableTo(fixtures.JobIsolatedNetworkPolicySpec("pi")))
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
})
