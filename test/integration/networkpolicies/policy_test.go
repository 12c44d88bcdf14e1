package networkpolicies

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

func ingressIsolated(job string) networkingv1.NetworkPolicySpec {
	return fixtures.IngressIsolatedNetworkPolicySpec(job)
}

func jobIsolated(job string) networkingv1.NetworkPolicySpec {
	return fixtures.JobIsolatedNetworkPolicySpec(job)
}

func restricted(job string, ssh, from, to int) networkingv1.NetworkPolicySpec {
	return fixtures.RestrictedNetworkPolicySpec(job, ssh, from, to)
}

// expectPolicy waits for the job's policy to have exactly spec and template and
// the ownership every policy must carry: our labels, one controller reference to
// the job, and a single server-side apply field owner.
func expectPolicy(ctx context.Context, job *trainer.TrainJob, template string, spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
	GinkgoHelper()
	var p *networkingv1.NetworkPolicy
	Eventually(func(g Gomega) {
		p = policyOf(ctx, job.Namespace, job.Name)(g)
		g.Expect(p).NotTo(BeNil(), "NetworkPolicy %s/%s does not exist", job.Namespace, job.Name)
		g.Expect(p.Spec).To(BeComparableTo(spec))
		g.Expect(p.Labels).To(HaveKeyWithValue("mpiguard.io/network-policy-template", template))
		g.Expect(p.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "mpiguard-networkpolicies"))
		g.Expect(p.OwnerReferences).To(ConsistOf(metav1.OwnerReference{
			APIVersion:         "trainer.kubeflow.org/v1alpha1",
			Kind:               "TrainJob",
			Name:               job.Name,
			UID:                job.UID,
			Controller:         ptr.To(true),
			BlockOwnerDeletion: ptr.To(true),
		}))
		var appliers []string
		for _, mf := range p.ManagedFields {
			if mf.Operation == metav1.ManagedFieldsOperationApply {
				appliers = append(appliers, mf.Manager)
			}
		}
		g.Expect(appliers).To(ConsistOf("mpiguard.io/networkpolicies"), "the policy is server-side applied by one field owner")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	return p
}

func createRuntime(ctx context.Context, rt client.Object) {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, rt)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, rt))).To(Succeed()) })
}

func createJob(ctx context.Context, job *trainer.TrainJob) *trainer.TrainJob {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, job)).To(Succeed())
	return job
}

var _ = Describe("the per-job NetworkPolicy", func() {
	var ns string
	BeforeEach(func(ctx context.Context) {
		ns = env.Namespace(ctx, nil)
	})

	It("is ingress-isolated by default: only the job's pods in, egress left out, and a controller owner reference", func(ctx context.Context) {
		rt := fixtures.MPIRuntime("np-default-" + ns).Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "pi", rt.Name).NumNodes(2).Obj())

		expectPolicy(ctx, job, "ingress-isolated", ingressIsolated("pi"))
		Eventually(eventReasons(ctx, ns, "pi")).WithTimeout(timeout).Should(ContainElement("NetworkPolicyCreated"))
	})

	It("is in place for a suspended (queued) TrainJob before it is admitted", func(ctx context.Context) {
		rt := fixtures.MPIRuntime("np-suspended-" + ns).Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "queued", rt.Name).Suspend(true).Obj())

		expectPolicy(ctx, job, "ingress-isolated", ingressIsolated("queued"))
	})

	It("is restricted with the runtime's sshd port and worker range when the runtime asks for it", func(ctx context.Context) {
		rt := fixtures.MPIRuntime("np-restricted-"+ns).
			Annotation("mpiguard.io/network-policy", "restricted").
			Annotation("mpiguard.io/network-policy-ssh-port", "2022").
			Annotation("mpiguard.io/network-policy-worker-ports", "40000-40100").
			Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "ring", rt.Name).Obj())

		expectPolicy(ctx, job, "restricted", restricted("ring", 2022, 40000, 40100))
	})

	It("is restricted with the defaults (sshd 2222, workers 50000-50999) for a namespaced TrainingRuntime", func(ctx context.Context) {
		rt := fixtures.MPIRuntime("np-ns-rt").Annotation("mpiguard.io/network-policy", "restricted").Namespaced(ns)
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "local", rt.Name).NamespacedRuntime().Obj())

		expectPolicy(ctx, job, "restricted", restricted("local", 2222, 50000, 50999))
	})

	It("is restricted on the sshd port the runtime's Worker readiness probe checks", func(ctx context.Context) {
		b := fixtures.MPIRuntime("np-probe-"+ns).Annotation("mpiguard.io/network-policy", "restricted")
		b.Container("node", "node").ReadinessProbe = &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(2022)}},
		}
		rt := b.Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "probe", rt.Name).Obj())

		expectPolicy(ctx, job, "restricted", restricted("probe", 2022, 50000, 50999))
	})

	It("follows the namespace template over the runtime's, and adds the namespace's extra egress", func(ctx context.Context) {
		annotateNamespace(ctx, ns,
			"mpiguard.io/network-policy", "job-isolated",
			"mpiguard.io/network-policy-extra-egress", "10.20.0.0/16:443, 192.168.7.0/24:9000-9100/TCP")
		rt := fixtures.MPIRuntime("np-precedence-"+ns).Annotation("mpiguard.io/network-policy", "off").Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "bucket", rt.Name).Obj())

		spec := jobIsolated("bucket")
		spec.Egress = append(spec.Egress, fixtures.NetworkPolicySpecYAML(`
egress:
- to: [{ipBlock: {cidr: 10.20.0.0/16}}]
  ports: [{protocol: TCP, port: 443}]
- to: [{ipBlock: {cidr: 192.168.7.0/24}}]
  ports: [{protocol: TCP, port: 9000, endPort: 9100}]
`).Egress...)
		expectPolicy(ctx, job, "job-isolated", spec)
	})

	It("lets in the sources the namespace's extra ingress names, in every template", func(ctx context.Context) {
		annotateNamespace(ctx, ns, "mpiguard.io/network-policy-extra-ingress", "monitoring/app.kubernetes.io/name=prometheus:9090, ingress-nginx:6006")
		rt := fixtures.MPIRuntime("np-ingress-" + ns).Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "board", rt.Name).Obj())

		extra := fixtures.NetworkPolicySpecYAML(`
ingress:
- from:
  - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
    podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}
  ports: [{protocol: TCP, port: 9090}]
- from:
  - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress-nginx}}
  ports: [{protocol: TCP, port: 6006}]
`).Ingress
		spec := ingressIsolated("board")
		spec.Ingress = append(spec.Ingress, extra...)
		expectPolicy(ctx, job, "ingress-isolated", spec)

		By("switching the namespace to the strict template: the same sources, and egress isolated")
		annotateNamespace(ctx, ns, "mpiguard.io/network-policy", "job-isolated")
		spec = jobIsolated("board")
		spec.Ingress = append(spec.Ingress, extra...)
		expectPolicy(ctx, job, "job-isolated", spec)
	})

	It("is written for no TrainJob whose runtime is not MPI", func(ctx context.Context) {
		torch := fixtures.TorchRuntime("np-torch-" + ns).Cluster()
		createRuntime(ctx, torch)
		createJob(ctx, fixtures.TrainJob(ns, "torch", torch.Name).Obj())

		// A later MPI job in the same namespace gets its policy: the controller
		// has seen this namespace, so the torch job's absence below means "decided
		// no", not "not reached yet".
		mpi := fixtures.MPIRuntime("np-torch-control-" + ns).Cluster()
		createRuntime(ctx, mpi)
		control := createJob(ctx, fixtures.TrainJob(ns, "control", mpi.Name).Obj())
		expectPolicy(ctx, control, "ingress-isolated", ingressIsolated("control"))

		Consistently(policyOf(ctx, ns, "torch")).WithTimeout(quiet).Should(BeNil())
		var list networkingv1.NetworkPolicyList
		Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(1), "only the MPI job has a policy")
	})

	It("is written for no TrainJob that Kueue's MultiKueue runs on another cluster", func(ctx context.Context) {
		mpi := fixtures.MPIRuntime("np-multikueue-" + ns).Cluster()
		createRuntime(ctx, mpi)
		createJob(ctx, fixtures.TrainJob(ns, "dispatched", mpi.Name).ManagedBy(kueue.MultiKueueControllerName).Obj())

		// As above: the later job's policy says the controller has reached
		// this namespace, so the dispatched job's absence means "decided no".
		control := createJob(ctx, fixtures.TrainJob(ns, "control", mpi.Name).Obj())
		expectPolicy(ctx, control, "ingress-isolated", ingressIsolated("control"))

		Consistently(policyOf(ctx, ns, "dispatched")).WithTimeout(quiet).Should(BeNil())
	})

	It("is restored every time it is deleted", func(ctx context.Context) {
		rt := fixtures.MPIRuntime("np-delete-" + ns).Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "phoenix", rt.Name).Obj())
		first := expectPolicy(ctx, job, "ingress-isolated", ingressIsolated("phoenix"))
		repaired := changes("repaired")

		seen := map[string]bool{string(first.UID): true}
		for i := 1; i <= 2; i++ {
			By(fmt.Sprintf("deleting the policy, time %d", i))
			current := policyOf(ctx, ns, "phoenix")(Default)
			Expect(env.Client.Delete(ctx, current)).To(Succeed())
			Eventually(func(g Gomega) {
				p := policyOf(ctx, ns, "phoenix")(g)
				g.Expect(p).NotTo(BeNil())
				g.Expect(seen).NotTo(HaveKey(string(p.UID)), "still the deleted object")
			}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
			p := expectPolicy(ctx, job, "ingress-isolated", ingressIsolated("phoenix"))
			seen[string(p.UID)] = true
			Eventually(changes).WithArguments("repaired").WithTimeout(timeout).Should(Equal(repaired+float64(i)), "repairs counted")
		}
		Eventually(eventReasons(ctx, ns, "phoenix")).WithTimeout(timeout).Should(ContainElement("NetworkPolicyRepaired"))
	})

	It("reverts edits to selectors, ports, labels and the owner reference", func(ctx context.Context) {
		rt := fixtures.MPIRuntime("np-edit-"+ns).Annotation("mpiguard.io/network-policy", "restricted").Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "steady", rt.Name).Obj())
		want := restricted("steady", 2222, 50000, 50999)
		expectPolicy(ctx, job, "restricted", want)

		edits := map[string]func(p *networkingv1.NetworkPolicy){
			"widen the podSelector to every pod": func(p *networkingv1.NetworkPolicy) {
				p.Spec.PodSelector = metav1.LabelSelector{}
			},
			"open the sshd rule to everyone on every port": func(p *networkingv1.NetworkPolicy) {
				p.Spec.Ingress[0] = networkingv1.NetworkPolicyIngressRule{}
			},
			"change the template label": func(p *networkingv1.NetworkPolicy) {
				p.Labels["mpiguard.io/network-policy-template"] = "off"
			},
			"remove the owner reference": func(p *networkingv1.NetworkPolicy) {
				p.OwnerReferences = nil
			},
		}
		for what, edit := range edits {
			By(what)
			repaired := changes("repaired")
			p := policyOf(ctx, ns, "steady")(Default)
			edit(p)
			Expect(env.Client.Update(ctx, p)).To(Succeed())
			expectPolicy(ctx, job, "restricted", want)
			Eventually(changes).WithArguments("repaired").WithTimeout(timeout).Should(Equal(repaired+1), "repair counted for %q", what)
		}
	})

	It("follows the namespace template when it is switched, deleting the policy for off", func(ctx context.Context) {
		rt := fixtures.MPIRuntime("np-switch-" + ns).Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "switch", rt.Name).Obj())
		expectPolicy(ctx, job, "ingress-isolated", ingressIsolated("switch"))

		By("switching the namespace to restricted with its own ports")
		annotateNamespace(ctx, ns, "mpiguard.io/network-policy", "restricted",
			"mpiguard.io/network-policy-ssh-port", "22", "mpiguard.io/network-policy-worker-ports", "30000-30010")
		expectPolicy(ctx, job, "restricted", restricted("switch", 22, 30000, 30010))
		Eventually(eventReasons(ctx, ns, "switch")).WithTimeout(timeout).Should(ContainElement("NetworkPolicyUpdated"))

		By("switching the namespace to off")
		annotateNamespace(ctx, ns, "mpiguard.io/network-policy", "off")
		Eventually(policyOf(ctx, ns, "switch")).WithTimeout(timeout).WithPolling(interval).Should(BeNil())
		Eventually(eventReasons(ctx, ns, "switch")).WithTimeout(timeout).Should(ContainElement("NetworkPolicyDeleted"))

		By("removing the namespace annotation: back to the default")
		annotateNamespace(ctx, ns, "mpiguard.io/network-policy", "")
		expectPolicy(ctx, job, "ingress-isolated", ingressIsolated("switch"))
	})

	It("follows a change of the runtime's annotation", func(ctx context.Context) {
		rt := fixtures.MPIRuntime("np-rt-switch-" + ns).Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "rtswitch", rt.Name).Obj())
		expectPolicy(ctx, job, "ingress-isolated", ingressIsolated("rtswitch"))

		patch := client.MergeFrom(rt.DeepCopy())
		rt.Annotations = map[string]string{"mpiguard.io/network-policy": "restricted", "mpiguard.io/network-policy-worker-ports": "41000"}
		Expect(env.Client.Patch(ctx, rt, patch)).To(Succeed())

		expectPolicy(ctx, job, "restricted", restricted("rtswitch", 2222, 41000, 0)) // single port: no endPort
	})

	It("is deleted when the runtime stops being MPI, and kept when the runtime disappears", func(ctx context.Context) {
		rt := fixtures.MPIRuntime("np-demote-" + ns).Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "demoted", rt.Name).Obj())
		expectPolicy(ctx, job, "ingress-isolated", ingressIsolated("demoted"))

		By("deleting the runtime: the policy stays (failing open is not an option) and the job is told why")
		Expect(env.Client.Delete(ctx, rt)).To(Succeed())
		Eventually(eventNotes(ctx, ns, "demoted", "NetworkPolicyRuntimeNotFound")).WithTimeout(timeout).Should(ContainElement(
			fmt.Sprintf(`ClusterTrainingRuntime %q referenced by spec.runtimeRef does not exist, so mpiguard cannot tell whether this is an MPI job and writes no NetworkPolicy; create the runtime or fix spec.runtimeRef`, rt.Name)))
		Consistently(policyOf(ctx, ns, "demoted")).WithTimeout(quiet).ShouldNot(BeNil())

		By("re-creating it without mlPolicy.mpi: the policy goes")
		torch := fixtures.TorchRuntime(rt.Name).Cluster()
		createRuntime(ctx, torch)
		Eventually(policyOf(ctx, ns, "demoted")).WithTimeout(timeout).WithPolling(interval).Should(BeNil())
		Eventually(eventNotes(ctx, ns, "demoted", "NetworkPolicyDeleted")).WithTimeout(timeout).Should(ContainElement(
			fmt.Sprintf("NetworkPolicy %s/demoted deleted: runtime no longer has mlPolicy.mpi", ns)))
	})

	It("never takes over a NetworkPolicy of the same name that someone else wrote, and writes its own once that is gone", func(ctx context.Context) {
		theirs := fixtures.HandWrittenNetworkPolicy(ns, "taken")
		Expect(env.Client.Create(ctx, theirs)).To(Succeed())
		rt := fixtures.MPIRuntime("np-conflict-" + ns).Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "taken", rt.Name).Obj())

		Eventually(eventNotes(ctx, ns, "taken", "NetworkPolicyConflict")).WithTimeout(timeout).Should(ContainElement(
			ContainSubstring(fmt.Sprintf("NetworkPolicy %s/taken already exists and is not managed by mpiguard", ns))))
		p := policyOf(ctx, ns, "taken")(Default)
		Expect(p.Spec).To(BeComparableTo(theirs.Spec))
		Expect(p.Labels).To(Equal(map[string]string{"owner": "admin"}))
		Expect(p.OwnerReferences).To(BeEmpty())

		By("deleting their policy: the job gets its own")
		Expect(env.Client.Delete(ctx, p)).To(Succeed())
		expectPolicy(ctx, job, "ingress-isolated", ingressIsolated("taken"))
	})

	It("warns on the job about a bad annotation and falls back to the default template", func(ctx context.Context) {
		annotateNamespace(ctx, ns, "mpiguard.io/network-policy", "restrictd")
		rt := fixtures.MPIRuntime("np-typo-"+ns).Annotation("mpiguard.io/network-policy", "off").Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "typo", rt.Name).Obj())

		expectPolicy(ctx, job, "ingress-isolated", ingressIsolated("typo"))
		Eventually(eventNotes(ctx, ns, "typo", "InvalidNetworkPolicyAnnotation")).WithTimeout(timeout).Should(ContainElement(
			fmt.Sprintf(`Namespace %q annotation mpiguard.io/network-policy: "restrictd" is not a network policy template; use one of "ingress-isolated", "job-isolated", "restricted" or "off"; using the controller default "ingress-isolated" until it is fixed`, ns)))
	})
})
