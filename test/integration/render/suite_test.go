// Package render is the fidelity suite of internal/render: the Kubeflow Trainer's
// own controllers run in this process against a real kube-apiserver, turn a corpus
// of TrainJob/runtime pairs into JobSets, and the suite checks that the JobView
// mpiguard renders offline says exactly what the Trainer built and what the
// apiserver charges for its pods, and which pods the apiserver's default
// admission chain refuses: hand-written cases and random ones (random_test.go).
package render

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/framework"
)

var (
	env      *framework.Env
	renderer *render.Renderer
)

func TestRender(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Render fidelity")
}

var _ = BeforeSuite(func(ctx context.Context) {
	env = framework.StartSuite(context.Background(), framework.Options{
		Name:  "render",
		Setup: framework.TrainerController,
		// The admission chain of a cluster's apiserver: the pods are judged
		// and charged by every plugin that acts on them (ServiceAccount
		// included, with the controller that makes each namespace's
		// "default" ServiceAccount).
		DefaultAdmissionChain: true,
	})
	// This suite compares the renderer with the Trainer alone: mpiguard's own
	// admission (tested in test/integration/admission) would mutate or deny parts of
	// the corpus on purpose, so its webhook configurations are removed here.
	Expect(env.Client.DeleteAllOf(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{})).To(Succeed())
	Expect(env.Client.DeleteAllOf(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{})).To(Succeed())
	Eventually(func(g Gomega) {
		var v admissionregistrationv1.ValidatingWebhookConfigurationList
		var m admissionregistrationv1.MutatingWebhookConfigurationList
		g.Expect(env.Client.List(ctx, &v)).To(Succeed())
		g.Expect(env.Client.List(ctx, &m)).To(Succeed())
		g.Expect(v.Items).To(BeEmpty())
		g.Expect(m.Items).To(BeEmpty())
	}).Should(Succeed())

	var err error
	renderer, err = render.NewRenderer(ctx)
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(framework.SuiteStartTimeout))
