package replicas

import (
	"context"
	"crypto/tls"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// clientAuthSpecs prove --client-ca: the suite's apiserver presents a client
// certificate (framework.Options.ClientAuth), and a caller that cannot is
// refused before any review is read.
func clientAuthSpecs() {
	It("answers only callers with the apiserver's client certificate: a forged review from anyone else reserves nothing", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("forged-"+ns, "4"))
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "16"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		// The whole quota: 4 Workers x 4 GPUs.
		forged := fixtures.TrainJob(ns, "forged", rt.Name).NumNodes(4).NumProcPerNode(4).Obj()

		otherCA, err := framework.NewTestCA("someone-else")
		Expect(err).NotTo(HaveOccurred())
		_, _, otherCAsCert, err := otherCA.Issue(framework.WebhookClientName)
		Expect(err).NotTo(HaveOccurred())
		_, _, wrongName, err := env.WebhookClientCA.Issue("a-tenant-pod")
		Expect(err).NotTo(HaveOccurred())
		_, _, apiserversCert, err := env.WebhookClientCA.Issue(framework.WebhookClientName)
		Expect(err).NotTo(HaveOccurred())

		for _, caller := range []struct {
			name  string
			certs []tls.Certificate
		}{
			{"no client certificate", nil},
			{"a certificate of another CA, with the apiserver's name", []tls.Certificate{otherCAsCert}},
			{"a certificate of the apiserver's CA with another name", []tls.Certificate{wrongName}},
		} {
			for range 3 {
				_, err := reviewAt(env.Proxy.Addr(), forged, caller.certs, false)
				Expect(err).To(HaveOccurred(), "%s: the webhook answered", caller.name)
			}
		}
		Expect(env.ReservedJobs(ctx, ns)).To(BeEmpty(), "a refused caller reserved quota")

		// The same review with the apiserver's certificate is answered (a dry
		// run, which reserves nothing): what refused the others is the certificate.
		resp, err := reviewAt(env.Proxy.Addr(), forged, []tls.Certificate{apiserversCert}, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.UID).To(Equal(types.UID("review-forged")), "answered: allowed %t, %v", resp.Allowed, resp.Result)

		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "real", rt.Name).NumNodes(4).NumProcPerNode(4).Obj())).
			To(Succeed(), "the tenant's real job gets the whole quota")
	})
}
