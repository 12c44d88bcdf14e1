package admission

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// ExemptLabel is the namespace-wide opt-out config/webhook's namespaceSelector
// honours (config/webhook/webhook-scope.yaml).
const exemptLabel = "mpiguard.io/exempt"

// trainJobWebhookCalls is how many requests the TrainJob webhooks of this
// process have served (controller-runtime's webhook metrics).
func trainJobWebhookCalls() float64 {
	GinkgoHelper()
	return framework.Counter("controller_runtime_webhook_requests_total", map[string]string{"webhook": "/validate-trainer-kubeflow-org-v1alpha1-trainjob"}) +
		framework.Counter("controller_runtime_webhook_requests_total", map[string]string{"webhook": "/mutate-trainer-kubeflow-org-v1alpha1-trainjob"})
}

var _ = Describe("a namespace labelled mpiguard.io/exempt=true", func() {
	It("never reaches the TrainJob webhooks: no call, no mutation, no denial; an unlabelled one does", func(ctx context.Context) {
		exempt := env.Namespace(ctx, map[string]string{exemptLabel: "true"})
		governed := env.Namespace(ctx, nil)
		// Slots per worker 2 on 4 GPUs per worker: slots-gpus denies it.
		rt := createRuntime(ctx, gpuWorkers("exempt-"+exempt, "4"))

		By("a job every webhook would act on, created in the exempt namespace")
		before := trainJobWebhookCalls()
		stored := admitted(ctx, fixtures.TrainJob(exempt, "unchecked", rt.Name).NumNodes(2).NumProcPerNode(2).Obj())
		Expect(trainJobWebhookCalls()).To(Equal(before), "the apiserver called a TrainJob webhook for namespace %s", exempt)
		Expect(stored.Spec.ActiveDeadlineSeconds).To(BeZero(), "max-duration's default deadline was set: the mutating webhook ran")
		Expect(mpiguardPatch(stored)).To(BeNil(), "mpiguard's runtime patch entry was written: the mutating webhook ran")

		By("the same job in an unlabelled namespace is judged")
		msg := denial(ctx, fixtures.TrainJob(governed, "checked", rt.Name).NumNodes(2).NumProcPerNode(2).Obj())
		Expect(msg).To(ContainSubstring("[slots-gpus]"))
		Expect(trainJobWebhookCalls()).To(BeNumerically(">", before))

		By("a label value other than \"true\" exempts nothing")
		other := env.Namespace(ctx, map[string]string{exemptLabel: "yes"})
		denial(ctx, fixtures.TrainJob(other, "checked", rt.Name).NumNodes(2).NumProcPerNode(2).Obj())
	})
})
