package personas

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// The users, as an identity provider would name them.
const (
	authorA   = "alice" // job-author in team A
	authorB   = "bob"   // job-author in team B
	viewerA   = "vera"  // viewer in team A
	operatorA = "oscar" // namespace-operator in team A
	runtimes  = "rita"  // runtime-admin, cluster-wide
	policies  = "paul"  // policy-admin in mpiguard's namespace
	editorA   = "eddie" // the built-in edit in team A
	adminA    = "ada"   // the built-in admin in team A
)

// The network-policy annotation a tenant must not set on its own namespace
// (docs/networkpolicies.md).
const networkPolicyAnnotation = "mpiguard.io/network-policy"

var _ = Describe("the persona roles config/default ships", Ordered, func() {
	var teamA, teamB string
	var rt *trainer.ClusterTrainingRuntime

	BeforeAll(func(ctx context.Context) {
		teamA = env.Namespace(ctx, nil)
		teamB = env.Namespace(ctx, nil)
		rt = env.CreateClusterRuntime(ctx, fixtures.GPUWorkersRuntime("personas-"+teamA, "1").Cluster())
		bindInNamespace(ctx, teamA, prefix+"job-author", authorA)
		bindInNamespace(ctx, teamB, prefix+"job-author", authorB)
		bindInNamespace(ctx, teamA, prefix+"viewer", viewerA)
		bindInNamespace(ctx, teamA, prefix+"namespace-operator", operatorA)
		bindInNamespace(ctx, env.PolicyNamespace, prefix+"policy-admin", policies)
		bindInNamespace(ctx, teamA, "edit", editorA)
		bindInNamespace(ctx, teamA, "admin", adminA)
		bindClusterWide(ctx, prefix+"runtime-admin", runtimes)
		// A runtime in team A's namespace and a Report in each, as mpiguard
		// and the admin would leave them.
		Expect(env.Client.Create(ctx, fixtures.GPUWorkersRuntime("team-runtime", "1").Namespaced(teamA))).To(Succeed())
		for _, ns := range []string{teamA, teamB} {
			Expect(env.Client.Create(ctx, report(ns, "trainjob-audit"))).To(Succeed())
		}
	})

	job := func(ns, name string) *trainer.TrainJob {
		return fixtures.TrainJob(ns, name, rt.Name).NumNodes(1).Obj()
	}

	It("lets team A's author create TrainJobs in A and refuses them in B", func(ctx context.Context) {
		alice := as(authorA)
		Expect(alice.Create(ctx, job(teamA, "alice-in-a"))).To(Succeed())
		expectRBACRefusal(alice.Create(ctx, job(teamB, "alice-in-b")), authorA, "create", "trainjobs")

		By("and B's author is refused in A: neither reads nor deletes the other's jobs")
		bob := as(authorB)
		Expect(bob.Create(ctx, job(teamB, "bob-in-b"))).To(Succeed())
		expectRBACRefusal(bob.List(ctx, &trainer.TrainJobList{}, client.InNamespace(teamA)), authorB, "list", "trainjobs")
		expectRBACRefusal(bob.Get(ctx, types.NamespacedName{Namespace: teamA, Name: "alice-in-a"}, &trainer.TrainJob{}), authorB, "get", "trainjobs")
		expectRBACRefusal(bob.Delete(ctx, job(teamA, "alice-in-a")), authorB, "delete", "trainjobs")
	})

	It("lets the author read the Reports, Events, RuntimeTests and runtimes of A, and no other team's Reports", func(ctx context.Context) {
		alice := as(authorA)
		Expect(alice.Get(ctx, types.NamespacedName{Namespace: teamA, Name: "trainjob-audit"}, report(teamA, "trainjob-audit"))).To(Succeed())
		Expect(alice.List(ctx, &corev1.EventList{}, client.InNamespace(teamA))).To(Succeed())
		Expect(alice.List(ctx, &api.RuntimeTestList{}, client.InNamespace(teamA))).To(Succeed())
		Expect(alice.List(ctx, &trainer.TrainingRuntimeList{}, client.InNamespace(teamA))).To(Succeed())

		reports := &unstructured.UnstructuredList{}
		reports.SetAPIVersion("openreports.io/v1alpha1")
		reports.SetKind("ReportList")
		expectRBACRefusal(alice.List(ctx, reports, client.InNamespace(teamB)), authorA, "list", "reports")
		expectRBACRefusal(alice.Get(ctx, types.NamespacedName{Namespace: teamB, Name: "trainjob-audit"}, report(teamB, "x")), authorA, "get", "reports")
	})

	It("lets a team read the ClusterTrainingRuntimes once runtime-reader is bound to it", func(ctx context.Context) {
		alice := as(authorA, "team-a")
		expectRBACRefusal(alice.List(ctx, &trainer.ClusterTrainingRuntimeList{}), authorA, "list", "clustertrainingruntimes")
		bindClusterWideGroup(ctx, prefix+"runtime-reader", "team-a")
		Eventually(func() error { return alice.List(ctx, &trainer.ClusterTrainingRuntimeList{}) }).Should(Succeed())
		expectRBACRefusal(alice.Patch(ctx, &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: rt.Name}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`))), authorA, "patch", "clustertrainingruntimes")
	})

	It("lets a viewer list but not create", func(ctx context.Context) {
		vera := as(viewerA)
		var jobs trainer.TrainJobList
		Expect(vera.List(ctx, &jobs, client.InNamespace(teamA))).To(Succeed())
		Expect(jobs.Items).NotTo(BeEmpty(), "the viewer sees team A's jobs")
		expectRBACRefusal(vera.Create(ctx, job(teamA, "vera-in-a")), viewerA, "create", "trainjobs")
		expectRBACRefusal(vera.Delete(ctx, job(teamA, "alice-in-a")), viewerA, "delete", "trainjobs")
		expectRBACRefusal(vera.Create(ctx, &api.RuntimeTest{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "smoke"}}), viewerA, "create", "runtimetests")
	})

	It("refuses the author the namespace's NetworkPolicy annotations, the runtimes, the QuotaReservations and the policy ConfigMaps", func(ctx context.Context) {
		alice := as(authorA)

		By("the mpiguard.io/network-policy* annotations of its own namespace")
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamA}}
		openUp := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+networkPolicyAnnotation+`":"disabled","`+networkPolicyAnnotation+`-ssh-port":"22"}}}`))
		expectRBACRefusal(alice.Patch(ctx, ns, openUp), authorA, "patch", "namespaces")

		By("a TrainingRuntime of its namespace (pod templates, NetworkPolicy annotations), and a new one")
		rtPatch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+networkPolicyAnnotation+`":"disabled"}}}`))
		expectRBACRefusal(alice.Patch(ctx, &trainer.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "team-runtime"}}, rtPatch), authorA, "patch", "trainingruntimes")
		expectRBACRefusal(alice.Create(ctx, fixtures.GPUWorkersRuntime("own-runtime", "1").Namespaced(teamA)), authorA, "create", "trainingruntimes")
		expectRBACRefusal(alice.Patch(ctx, &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: rt.Name}}, rtPatch), authorA, "patch", "clustertrainingruntimes")

		By("the QuotaReservation that holds its namespace's quota")
		res := &api.QuotaReservation{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: teamA},
			Spec:       api.QuotaReservationSpec{Namespace: teamA},
		}
		expectRBACRefusal(alice.Create(ctx, res), authorA, "create", "quotareservations")
		expectRBACRefusal(alice.Delete(ctx, res), authorA, "delete", "quotareservations")
		expectRBACRefusal(alice.Get(ctx, client.ObjectKeyFromObject(res), &api.QuotaReservation{}), authorA, "get", "quotareservations")

		By("a policy ConfigMap in mpiguard's namespace")
		policy := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: "planted", Labels: map[string]string{"mpiguard.io/policy": "rego"}},
			Data:       map[string]string{"planted.rego": "package mpiguard.policies.planted\n"},
		}
		expectRBACRefusal(alice.Create(ctx, policy), authorA, "create", "configmaps")
		expectRBACRefusal(alice.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(env.PolicyNamespace)), authorA, "list", "configmaps")

		By("the namespace operator no more than the author")
		oscar := as(operatorA)
		expectRBACRefusal(oscar.Patch(ctx, ns, openUp), operatorA, "patch", "namespaces")
		expectRBACRefusal(oscar.Create(ctx, fixtures.GPUWorkersRuntime("own-runtime", "1").Namespaced(teamA)), operatorA, "create", "trainingruntimes")
		expectRBACRefusal(oscar.Create(ctx, policy), operatorA, "create", "configmaps")
	})

	It("lets the namespace operator manage everyone's jobs, run RuntimeTests and read the quotas of its namespace only", func(ctx context.Context) {
		oscar := as(operatorA)
		Expect(oscar.List(ctx, &corev1.ResourceQuotaList{}, client.InNamespace(teamA))).To(Succeed())
		Expect(oscar.Create(ctx, job(teamA, "oscar-in-a"))).To(Succeed())
		Expect(oscar.Delete(ctx, job(teamA, "oscar-in-a"))).To(Succeed())
		smoke := &api.RuntimeTest{
			ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "smoke"},
			Spec:       api.RuntimeTestSpec{RuntimeRef: api.RuntimeRef{Name: rt.Name}},
		}
		Expect(oscar.Create(ctx, smoke, dryRun)).To(Succeed())
		expectRBACRefusal(oscar.List(ctx, &corev1.ResourceQuotaList{}, client.InNamespace(teamB)), operatorA, "list", "resourcequotas")
	})

	It("gives the built-in edit, view and admin the personas' rules, and still not the admin-only surfaces", func(ctx context.Context) {
		eddie := as(editorA)
		Expect(eddie.Create(ctx, job(teamA, "eddie-in-a"))).To(Succeed())
		ada := as(adminA)
		Expect(ada.Create(ctx, job(teamA, "ada-in-a"), dryRun)).To(Succeed())
		expectRBACRefusal(ada.Create(ctx, fixtures.GPUWorkersRuntime("own-runtime", "1").Namespaced(teamA)), adminA, "create", "trainingruntimes")
		expectRBACRefusal(ada.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamA}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+networkPolicyAnnotation+`":"disabled"}}}`))), adminA, "patch", "namespaces")
	})

	It("lets the runtime admin set the NetworkPolicy annotations and edit runtimes, and the policy admin write policy ConfigMaps", func(ctx context.Context) {
		rita := as(runtimes)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamA}}
		Expect(rita.Patch(ctx, ns, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+networkPolicyAnnotation+`-ssh-port":"2222"}}}`)), dryRun)).To(Succeed())
		Expect(rita.Create(ctx, fixtures.GPUWorkersRuntime("own-runtime", "1").Namespaced(teamB), dryRun)).To(Succeed())
		Expect(rita.Patch(ctx, &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: rt.Name}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`)), dryRun)).To(Succeed())

		paul := as(policies)
		Expect(paul.List(ctx, &api.QuotaReservationList{}, client.InNamespace(env.PolicyNamespace))).To(Succeed())
		Expect(paul.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: "compliance-draft"}}, dryRun)).To(Succeed())
		expectRBACRefusal(paul.Create(ctx, &api.QuotaReservation{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: teamA},
			Spec:       api.QuotaReservationSpec{Namespace: teamA},
		}), policies, "create", "quotareservations")
		expectRBACRefusal(paul.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "elsewhere"}}), policies, "create", "configmaps")
	})
})
