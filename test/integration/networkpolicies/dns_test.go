package networkpolicies

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/networkpolicies"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// serveArgsOf returns the arguments the Deployment a kustomization renders
// passes to the mpiguard container.
func serveArgsOf(dir string) []string {
	GinkgoHelper()
	objs, err := framework.KustomizeBuild(dir)
	Expect(err).NotTo(HaveOccurred())
	return mpiguardArgs(dir, objs)
}

// mpiguardArgs returns the arguments of the mpiguard container of the
// Deployment among objs, what renders them.
func mpiguardArgs(what string, objs []*unstructured.Unstructured) []string {
	GinkgoHelper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d)).To(Succeed())
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "mpiguard" {
				return c.Args
			}
		}
	}
	Fail(what + " renders no Deployment with an mpiguard container")
	return nil
}

// componentsFromArgs parses args with `mpiguard serve`'s own flag set.
func componentsFromArgs(args []string) app.Options {
	GinkgoHelper()
	so := app.DefaultServeOptions()
	fs := pflag.NewFlagSet("mpiguard serve", pflag.ContinueOnError)
	so.AddFlags(fs)
	Expect(fs.Parse(args)).To(Succeed(), "mpiguard serve %v", args)
	return so.Components
}

// withDNS is spec with its DNS egress rule (the one peer naming a namespace)
// replaced by one to namespace/podLabels on ports over UDP and TCP.
func withDNS(spec networkingv1.NetworkPolicySpec, namespace string, podLabels map[string]string, ports ...int32) networkingv1.NetworkPolicySpec {
	GinkgoHelper()
	rule := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": namespace}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: podLabels},
	}}}
	for _, p := range ports {
		for _, proto := range []corev1.Protocol{corev1.ProtocolUDP, corev1.ProtocolTCP} {
			rule.Ports = append(rule.Ports, networkingv1.NetworkPolicyPort{Protocol: ptr.To(proto), Port: ptr.To(intstr.FromInt32(p))})
		}
	}
	out := *spec.DeepCopy()
	replaced := 0
	for i, r := range out.Egress {
		if len(r.To) == 1 && r.To[0].NamespaceSelector != nil {
			out.Egress[i] = rule
			replaced++
		}
	}
	Expect(replaced).To(Equal(1), "the spec has one DNS rule")
	return out
}

// The DNS target is a start-up setting of `mpiguard serve`: this spec restarts
// the suite's mpiguard with the arguments config/openshift gives it, as a
// rollout of that Deployment would, and then with the defaults again.
var _ = Describe("the per-job NetworkPolicy's cluster DNS", func() {
	It("is what the flags name: config/openshift's openshift-dns pods on 5353, then kube-dns on 53 again after a restart with the defaults", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		openshiftDNS := map[string]string{"dns.operator.openshift.io/daemonset-dns": "default"}

		By("restarting mpiguard with config/openshift's arguments")
		Expect(env.RestartManagers(ctx, componentsFromArgs(serveArgsOf("config/openshift")))).To(Succeed())
		defaults := false
		DeferCleanup(func(ctx context.Context) {
			if !defaults {
				Expect(env.RestartManagers(ctx, app.DefaultOptions())).To(Succeed())
			}
		})

		isolatedRT := fixtures.MPIRuntime("np-dns-"+ns).Annotation("mpiguard.io/network-policy", "job-isolated").Cluster()
		createRuntime(ctx, isolatedRT)
		isolated := createJob(ctx, fixtures.TrainJob(ns, "resolve", isolatedRT.Name).Obj())
		restrictedRT := fixtures.MPIRuntime("np-dns-restricted-"+ns).Annotation("mpiguard.io/network-policy", "restricted").Cluster()
		createRuntime(ctx, restrictedRT)
		ring := createJob(ctx, fixtures.TrainJob(ns, "ring", restrictedRT.Name).Obj())

		expectPolicy(ctx, isolated, "job-isolated", withDNS(jobIsolated("resolve"), "openshift-dns", openshiftDNS, 5353))
		expectPolicy(ctx, ring, "restricted", withDNS(restricted("ring", 2222, 50000, 50999), "openshift-dns", openshiftDNS, 5353))

		By("restarting mpiguard with the default flags: the same jobs' policies follow")
		defaults = true
		Expect(env.RestartManagers(ctx, app.DefaultOptions())).To(Succeed())
		expectPolicy(ctx, isolated, "job-isolated", jobIsolated("resolve"))
		expectPolicy(ctx, ring, "restricted", restricted("ring", 2222, 50000, 50999))
	})
})

// Upgrading from a release whose default was job-isolated: the flag keeps the
// old default; without it the same jobs' policies widen to ingress-isolated
// (docs/operations.md, "Upgrading").
var _ = Describe("the default template across an upgrade", func() {
	It("is what the Helm chart's jobNetworkPolicies values set, through mpiguard serve's flags", func() {
		objs, err := framework.HelmTemplate("mpiguard", "mpiguard-system", framework.WithImage(map[string]any{"jobNetworkPolicies": map[string]any{
			"defaultTemplate": "job-isolated",
			"extraIngress":    "monitoring/app.kubernetes.io/name=prometheus:9090",
			"extraEgress":     "52.216.0.0/15:443",
		}}))
		Expect(err).NotTo(HaveOccurred())
		np := componentsFromArgs(mpiguardArgs("the Helm chart", objs)).NetworkPolicies
		Expect(np.DefaultTemplate).To(Equal(networkpolicies.TemplateJobIsolated))
		Expect(np.ExtraIngress).To(ConsistOf(networkpolicies.IngressSource{Namespace: "monitoring",
			LabelKey: "app.kubernetes.io/name", LabelValue: "prometheus", Ports: networkpolicies.PortRange{Start: 9090}}))
		Expect(np.ExtraEgress).To(ConsistOf(networkpolicies.EgressRule{CIDR: "52.216.0.0/15", Protocol: corev1.ProtocolTCP,
			Ports: networkpolicies.PortRange{Start: 443}}))

		By("without the values: the default")
		objs, err = framework.HelmTemplate("mpiguard", "mpiguard-system", framework.WithImage(nil))
		Expect(err).NotTo(HaveOccurred())
		Expect(componentsFromArgs(mpiguardArgs("the Helm chart", objs)).NetworkPolicies.DefaultTemplate).To(BeEmpty(), "no flag: the controller's default, %s", networkpolicies.DefaultTemplate)
	})

	It("stays job-isolated with --network-policy-default-template=job-isolated and widens to ingress-isolated without it", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)

		By("restarting mpiguard with the flag that keeps the old default")
		Expect(env.RestartManagers(ctx, componentsFromArgs([]string{"--network-policy-default-template=job-isolated"}))).To(Succeed())
		defaults := false
		DeferCleanup(func(ctx context.Context) {
			if !defaults {
				Expect(env.RestartManagers(ctx, app.DefaultOptions())).To(Succeed())
			}
		})
		rt := fixtures.MPIRuntime("np-upgrade-" + ns).Cluster()
		createRuntime(ctx, rt)
		job := createJob(ctx, fixtures.TrainJob(ns, "kept", rt.Name).Obj())
		expectPolicy(ctx, job, "job-isolated", jobIsolated("kept"))

		By("restarting mpiguard with the default flags: the policy is rewritten to the new default")
		defaults = true
		Expect(env.RestartManagers(ctx, app.DefaultOptions())).To(Succeed())
		expectPolicy(ctx, job, "ingress-isolated", ingressIsolated("kept"))
	})
})
