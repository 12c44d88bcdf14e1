package networkpolicies

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// warningLines is what a client's warning writer wrote since the last call,
// one "Warning: ..." line per admission warning, as kubectl prints them.
func warningLines(b *bytes.Buffer) []string {
	out := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	b.Reset()
	return out
}

// The admission webhook tells whoever creates an MPI TrainJob which template
// its policy gets, resolved as the controller resolves it; the policy the
// controller then writes carries that template.
var _ = Describe("the admission warning of a create", func() {
	It("names the template the controller writes and what it leaves closed", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := fixtures.MPIRuntime("np-warn-" + ns).Cluster()
		createRuntime(ctx, rt)
		var w bytes.Buffer
		cfg := rest.CopyConfig(env.Config)
		cfg.WarningHandler = rest.NewWarningWriter(&w, rest.WarningWriterOptions{})
		c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())

		job := fixtures.TrainJob(ns, "told", rt.Name).Obj()
		Expect(c.Create(ctx, job)).To(Succeed())
		Expect(warningLines(&w)).To(ContainElement(`Warning: network policy "ingress-isolated" (controller default): ` +
			`no pod outside the job can connect to its Launcher and Workers; its pods may connect anywhere the namespace's other policies allow`))
		expectPolicy(ctx, job, "ingress-isolated", ingressIsolated("told"))

		By("a namespace that asks for the strict template with extra egress")
		annotateNamespace(ctx, ns, "mpiguard.io/network-policy", "job-isolated", "mpiguard.io/network-policy-extra-egress", "52.216.0.0/15:443")
		strict := fmt.Sprintf(`Warning: network policy "job-isolated" (Namespace %q): no pod outside the job can connect to its Launcher and Workers; `+
			`its pods cannot connect outside the job except to cluster DNS (kube-system port 53) and 52.216.0.0/15:443: `+
			`object storage, registries and the Kubernetes API need mpiguard.io/network-policy-extra-egress`, ns)
		Eventually(func(g Gomega) []string { // once mpiguard's cache has the annotation
			g.Expect(c.Create(ctx, fixtures.TrainJob(ns, "probe", rt.Name).Obj(), client.DryRunAll)).To(Succeed())
			return warningLines(&w)
		}).WithTimeout(timeout).WithPolling(interval).Should(ContainElement(strict))
		second := fixtures.TrainJob(ns, "told-again", rt.Name).Obj()
		Expect(c.Create(ctx, second)).To(Succeed())
		Expect(warningLines(&w)).To(ContainElement(strict))
		spec := jobIsolated("told-again")
		spec.Egress = append(spec.Egress, fixtures.NetworkPolicySpecYAML(`
egress:
- to: [{ipBlock: {cidr: 52.216.0.0/15}}]
  ports: [{protocol: TCP, port: 443}]
`).Egress...)
		expectPolicy(ctx, second, "job-isolated", spec)

		By("an update of the job: no warning about the policy")
		Expect(c.Get(ctx, client.ObjectKeyFromObject(second), second)).To(Succeed())
		second.Labels = map[string]string{"touched": "yes"}
		Expect(c.Update(ctx, second)).To(Succeed())
		Expect(warningLines(&w)).NotTo(ContainElement(ContainSubstring("network policy")))
	})
})
