package audit

import (
	"context"
	"fmt"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	reports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/audit"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

const compliancePolicy = fixtures.MaxWorkersPolicyName

var _ = Describe("audit", func() {
	It("reports an existing TrainJob that a policy tightened at run time denies, with the admission message, and passes it when relaxed", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := env.CreateClusterRuntime(ctx, fixtures.MPIRuntime("audit-tighten-"+ns).Cluster())
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "two-workers", rt.Name).NumNodes(2).Obj())).To(Succeed())
		// Its first audit (its creation triggers it): no compliance policy yet.
		eventuallyAudited(ctx, ns)
		_, err := resultOf(ctx, ns, trainer.TrainJobKind, "two-workers", compliancePolicy)
		Expect(err).To(HaveOccurred(), "no result of a policy that is not loaded yet")

		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: "audit-compliance", Labels: map[string]string{"mpiguard.io/policy": "rego"}},
			Data:       map[string]string{"max_workers.rego": fixtures.MaxWorkersPolicy(1)},
		}
		Expect(env.Client.Create(ctx, cm)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, cm))).To(Succeed()) })

		By("the reload triggers an audit: the stored job fails the new policy")
		failed := eventuallyResult(ctx, ns, trainer.TrainJobKind, "two-workers", compliancePolicy, reports.Result(audit.Fail))
		Expect(failed.Description).To(And(HavePrefix("spec.trainer.numNodes: "), ContainSubstring("may be at most 1"), ContainSubstring("this one has 2")))
		Expect(failed.Severity).To(BeEquivalentTo("high"))
		Expect(failed.Source).To(Equal(audit.Source))
		Expect(failed.Properties).To(HaveKeyWithValue(audit.PropertyField, "spec.trainer.numNodes"))
		Expect(failed.Properties).To(HaveKeyWithValue(audit.PropertyPolicySetVersion, Not(BeEmpty())))

		By("the message is the one admission gives the same job now")
		err = env.Client.Create(ctx, fixtures.TrainJob(ns, "two-workers-again", rt.Name).NumNodes(2).Obj())
		Expect(err).To(HaveOccurred(), "the tightened policy must deny a new job like it")
		Expect(err.Error()).To(ContainSubstring("[" + compliancePolicy + "] " + failed.Description))

		By("visible where people look: a Warning event on the job and the violations metric")
		Eventually(func() []string {
			var notes []string
			for _, e := range violationEvents(ctx, ns, "two-workers") {
				notes = append(notes, e.Type+" "+e.Note)
			}
			return notes
		}).WithContext(ctx).Should(ContainElement(And(HavePrefix("Warning "), ContainSubstring(compliancePolicy), ContainSubstring("may be at most 1"))))
		Eventually(func() float64 { return violations(compliancePolicy, ns) }).Should(Equal(1.0))

		By("relaxed again: the result passes")
		Eventually(func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
				return err
			}
			cm.Data["max_workers.rego"] = fixtures.MaxWorkersPolicy(4)
			return env.Client.Update(ctx, cm)
		}).WithContext(ctx).Should(Succeed())
		eventuallyPasses(ctx, ns, trainer.TrainJobKind, "two-workers", compliancePolicy)
		Expect(report(ctx, ns).Summary.Fail).To(BeZero())
		Eventually(func() float64 { return violations(compliancePolicy, ns) }).Should(Equal(-1.0), "no violation series left")

		By("a deleted job's results vanish with it")
		Expect(env.Client.Delete(ctx, &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two-workers"}})).To(Succeed())
		Eventually(func() *reports.Report { return report(ctx, ns) }).WithContext(ctx).WithTimeout(auditWait).Should(BeNil(),
			"nothing in the namespace is judged any more: no report")
	})

	It("reports a suspended job a lowered ResourceQuota no longer fits, with the numbers admission gives, and clears it when raised", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := env.CreateClusterRuntime(ctx, fixtures.MPIRuntime("audit-quota-"+ns).Cluster())
		env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "team", "pods", "10"), fixtures.ResourceList("pods", "0"))
		// 1 Launcher + 2 Workers: 3 pods when it starts. Created suspended
		// (Kueue's way): nothing is charged until it is resumed.
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "queued", rt.Name).NumNodes(2).Suspend(true).Obj())).To(Succeed())
		eventuallyPasses(ctx, ns, trainer.TrainJobKind, "queued", "aggregate-quota")

		By("the quota lowered under the job's need: reported with the numbers")
		setQuotaPods(ctx, ns, "team", "2")
		failed := eventuallyResult(ctx, ns, trainer.TrainJobKind, "queued", "aggregate-quota", reports.Result(audit.Fail))
		Expect(failed.Description).To(And(ContainSubstring("3 pods"), ContainSubstring(`"team"`), ContainSubstring("2")))

		By("the same words admission answers the resume with")
		resume := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))
		err := env.Client.Patch(ctx, &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "queued"}}, resume)
		Expect(err).To(HaveOccurred(), "the resume must be denied: 3 pods do not fit 2")
		Expect(err.Error()).To(ContainSubstring("[aggregate-quota] " + failed.Description))

		By("the quota raised: cleared")
		setQuotaPods(ctx, ns, "team", "10")
		eventuallyPasses(ctx, ns, trainer.TrainJobKind, "queued", "aggregate-quota")
	})

	It("audits a namespace once a burst of submits into it has rested, not during the burst, leaving the CPU to admission", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := env.CreateClusterRuntime(ctx, fixtures.MPIRuntime("audit-burst-"+ns).Cluster())
		// Room for one pod: every job (2 pods when resumed) is a violation
		// the Report lists, which shows it was judged (passes are counted,
		// not listed). A suspended submit is no quota decision: admitted.
		env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "team", "pods", "1"), fixtures.ResourceList("pods", "0"))
		// Submits 300 ms apart for about 3 s: the namespace never rests for
		// the debounce (2 s), so nothing is audited until the last one. An
		// audit 2 s after the first change would write the Report mid-burst.
		const jobs = 10
		for i := range jobs {
			Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, fmt.Sprintf("burst-%d", i), rt.Name).Suspend(true).Obj())).To(Succeed())
			Expect(report(ctx, ns)).To(BeNil(), "the namespace was audited during the burst, after %d submits", i+1)
			time.Sleep(300 * time.Millisecond)
		}

		By("at rest: one audit judges every job of the burst")
		Eventually(func(g Gomega) {
			r := report(ctx, ns)
			g.Expect(r).NotTo(BeNil())
			judged := map[string]bool{}
			for _, x := range r.Results {
				for _, s := range x.Subjects {
					if x.Policy == "aggregate-quota" && x.Result == reports.Result(audit.Fail) {
						judged[s.Name] = true
					}
				}
			}
			g.Expect(judged).To(HaveLen(jobs))
		}).WithContext(ctx).WithTimeout(auditWait).Should(Succeed())
	})

	It("reports a ClusterTrainingRuntime edited into violation of the template rules in the ClusterReport", func(ctx context.Context) {
		name := fmt.Sprintf("audit-runtime-%d", time.Now().UnixNano())
		env.CreateClusterRuntime(ctx, fixtures.MPIRuntime(name).Cluster())
		// The fixture lacks what the rules only recommend (Istio opt-outs,
		// readiness probe): a warning, not a violation.
		eventuallyResult(ctx, "", trainer.ClusterTrainingRuntimeKind, name, audit.RuntimeTemplatePolicy, reports.Result(audit.Warn))

		By("edited past the runtime webhook (bypassed): 2 replicas of the Worker job")
		bypassRuntimeWebhook(ctx)
		Eventually(func() error {
			var rt trainer.ClusterTrainingRuntime
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &rt); err != nil {
				return err
			}
			rt.Spec.Template.Spec.ReplicatedJobs[1].Replicas = 2
			return env.Client.Update(ctx, &rt) // denied until the apiserver drops the webhook
		}).WithContext(ctx).Should(Succeed())
		failed := eventuallyResult(ctx, "", trainer.ClusterTrainingRuntimeKind, name, audit.RuntimeTemplatePolicy, reports.Result(audit.Fail))
		Expect(failed.Description).To(And(ContainSubstring("spec.template.spec.replicatedJobs[1].replicas"), ContainSubstring("must be 1")))
		Expect(failed.Properties).To(HaveKeyWithValue(audit.PropertyField, "spec.template.spec.replicatedJobs[1].replicas"))
		Eventually(func() float64 { return violations(audit.RuntimeTemplatePolicy, "") }).Should(BeNumerically(">=", 1))
	})

	It("keeps each namespace's Report in that namespace, owned by it, and writes nothing once it is being deleted", func(ctx context.Context) {
		// Not env.Namespace: this spec deletes the namespace itself.
		created, err := env.NewNamespace(ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		ns := created.Name
		rt := env.CreateClusterRuntime(ctx, fixtures.MPIRuntime("audit-ns-"+ns).Cluster())
		// A violation, so the namespace has a metric series to drop too.
		env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "team", "pods", "1"), fixtures.ResourceList("pods", "0"))
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "queued", rt.Name).NumNodes(2).Suspend(true).Obj())).To(Succeed())
		eventuallyResult(ctx, ns, trainer.TrainJobKind, "queued", "aggregate-quota", reports.Result(audit.Fail))
		Eventually(func() float64 { return violations("aggregate-quota", ns) }).Should(Equal(1.0))

		var nsObj corev1.Namespace
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, &nsObj)).To(Succeed())
		r := report(ctx, ns)
		Expect(r.Namespace).To(Equal(ns), "a namespace's Report lives in it: the namespace controller deletes it with the namespace")
		Expect(r.OwnerReferences).To(ConsistOf(And(
			HaveField("Kind", "Namespace"), HaveField("Name", ns), HaveField("UID", nsObj.UID))), "owned by its Namespace: garbage collection deletes it too")
		var all reports.ReportList
		Expect(env.Client.List(ctx, &all)).To(Succeed())
		for _, other := range all.Items {
			for _, x := range other.Results {
				for _, s := range x.Subjects {
					Expect(s.Namespace == ns && other.Namespace != ns).To(BeFalse(), "Report %s/%s holds a result of namespace %s: it would outlive it", other.Namespace, other.Name, ns)
				}
			}
		}

		By("deleting the namespace: audit stops writing there and drops its metrics")
		Expect(env.Client.Delete(ctx, &nsObj)).To(Succeed())
		Eventually(func() float64 { return violations("aggregate-quota", ns) }).Should(Equal(-1.0))
		// envtest runs no namespace controller: do its part, delete the
		// namespace's content, and see that audit does not bring the
		// Report back while the namespace terminates, whatever triggers it.
		Expect(env.Client.Delete(ctx, r)).To(Succeed())
		Expect(env.Client.Delete(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"}})).To(Succeed())
		Consistently(func() bool {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(r), &reports.Report{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(8 * time.Second).Should(BeTrue())
	})
})
