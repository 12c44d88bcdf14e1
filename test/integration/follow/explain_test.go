package follow

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app/scheme"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

var _ = Describe("mpiguard explain", func() {
	It("judges a suspended Kueue job as its resume, as the webhook judges the resume, for a user who cannot read the QuotaReservations too", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		quota := fixtures.ResourceQuota(ns, "gpus", "requests.nvidia.com/gpu", "8")
		Expect(env.Client.Create(ctx, quota)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
			g.Expect(quota.Status.Hard).NotTo(BeEmpty())
		}, time.Minute).Should(Succeed(), "the quota controller counts the namespace")
		runtime(ctx, ns, "keep-running", nil, nil)

		By("a queued job is created suspended, as Kueue keeps it: its create starts nothing, and the quota policies wait for its resume")
		// The Launcher and 2 Workers of 8 GPUs: 24 GPUs, the quota has 8.
		job := fixtures.TrainJob(ns, "queued", "keep-running").NamespacedRuntime().NumNodes(3).NumProcPerNode(8).
			Requests("nvidia.com/gpu", "8").Limits("nvidia.com/gpu", "8", "memory", "64Gi").
			Label("kueue.x-k8s.io/queue-name", "team").Suspend(true).Obj()
		Expect(env.Client.Create(ctx, job)).To(Succeed())

		By("explain says what the resume will be told")
		out := explain(ctx, job)
		Expect(out).To(MatchRegexp(`Policies now:\s+DENIED, judged as its resume`))
		Expect(out).To(ContainSubstring("[aggregate-quota]"))
		Expect(out).To(ContainSubstring(`ResourceQuota "gpus" has 8 of 8 free`))
		Expect(out).NotTo(ContainSubstring("could not read mpiguard's QuotaReservations"))

		By("the webhook denies the resume, with the same reason")
		// As Kueue admits it: spec.suspend flipped, nothing else changed.
		err := env.Client.Patch(ctx, job.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`)))
		Expect(err).To(HaveOccurred(), "the quota admits the resume: the job cannot show what explain predicts")
		Expect(err.Error()).To(ContainSubstring("[aggregate-quota]"))
		Expect(err.Error()).To(ContainSubstring(`ResourceQuota "gpus" has 8 of 8 free`))

		By("a user who may read everything but mpiguard's QuotaReservations gets the verdict and is told what was left out")
		user := "reader-" + ns
		readAllButLedger(ctx, user)
		out = explainAs(ctx, Default, as(user), job)
		Expect(out).To(MatchRegexp(`Policies now:\s+DENIED, judged as its resume`))
		Expect(out).To(ContainSubstring(`ResourceQuota "gpus" has 8 of 8 free`))
		Expect(out).To(ContainSubstring(`cannot read mpiguard's QuotaReservations`))
		Expect(out).To(ContainSubstring(`note: could not read mpiguard's QuotaReservations in "` + env.PolicyNamespace + `" for namespace ` + ns))

		By("a tenant bound only to the shipped job-author (in the namespace) and runtime-reader roles gets the verdict too, told what it could not read")
		tenant := "tenant-" + ns
		bindShippedRoles(ctx, ns, tenant)
		out = explainAs(ctx, Default, as(tenant), job)
		Expect(out).To(MatchRegexp(`Policies now:\s+DENIED, judged as its resume`))
		Expect(out).To(ContainSubstring(`ResourceQuota "gpus" has 8 of 8 free`))
		Expect(out).To(ContainSubstring(`note: you may not read Namespace "` + ns + `": judged as if it had no labels or annotations`))
		Expect(out).To(ContainSubstring(`note: could not read mpiguard's QuotaReservations`))
	})
})

// bindShippedRoles binds user to the persona roles config/default ships, as
// docs/operations.md "Roles for teams" says: job-author in namespace ns,
// runtime-reader cluster-wide.
func bindShippedRoles(ctx context.Context, ns, user string) {
	GinkgoHelper()
	shipped, err := framework.KustomizeBuild("config/default")
	Expect(err).NotTo(HaveOccurred())
	const prefix = "mpiguard-" // config/default's namePrefix
	for _, o := range shipped {
		if o.GetKind() != "ClusterRole" || (o.GetName() != prefix+"job-author" && o.GetName() != prefix+"runtime-reader") {
			continue
		}
		role := o.DeepCopy()
		err := env.Client.Create(ctx, role)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, role)).To(Succeed()) })
	}
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}
	for _, o := range []client.Object{
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: prefix + "job-author"},
			Subjects:   subjects,
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: prefix + "runtime-reader"},
			Subjects:   subjects,
		},
	} {
		Expect(env.Client.Create(ctx, o)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, o)).To(Succeed()) })
	}
}

// readAllButLedger lets user read, in every namespace, what explain reads
// (the job, its runtime, pods, JobSet, Events, quotas, Workloads, Nodes and
// the cluster's classes) and nothing of mpiguard.io: not its QuotaReservations.
func readAllButLedger(ctx context.Context, user string) {
	GinkgoHelper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"", "trainer.kubeflow.org", "jobset.x-k8s.io", "kueue.x-k8s.io", "node.k8s.io", "scheduling.k8s.io", "events.k8s.io", "scheduling.volcano.sh"},
			Resources: []string{"*"},
			Verbs:     []string{"get", "list", "watch"},
		}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		Expect(env.Client.Create(ctx, o)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, o)).To(Succeed()) })
	}
}

// as is a client that makes every request as user (impersonated by the
// suite's admin), authorized by the apiserver's RBAC.
func as(user string) client.Client {
	GinkgoHelper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	return c
}
