// Package differential checks that `mpiguard check` evaluates exactly as
// admission does: every policy sample and a few hundred random clusters
// (fixtures.RandomCluster) go through internal/check, the code behind
// `mpiguard check --show-patches`, and through mpiguard's webhooks called by
// a real kube-apiserver; verdicts, violation messages, warnings and the
// mutated TrainJob must be identical.
//
// Random clusters are drawn from a seed printed at the start and in every
// failure; MPIGUARD_DIFF_SEED replays it, MPIGUARD_DIFF_N sets how many
// (default 300). One case alone: -ginkgo.focus 'random 17$'.
package differential

import (
	"context"
	"fmt"
	"slices"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

func TestDifferential(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Differential")
}

var _ = BeforeSuite(func(ctx context.Context) {
	// Printed, not logged: shown by go test -v and with any failure.
	fmt.Printf("differential: random clusters from seed %d (replay: MPIGUARD_DIFF_SEED=%d), %d cases\n", seed, seed, randomCases)
	components := app.DefaultOptions()
	// Only the TrainJob webhooks are under test. The runtime template
	// webhook is off: it refuses runtimes with malformed constraint
	// annotations, yet such runtimes exist (created before mpiguard, or with
	// --runtime-template-webhook=false) and TrainJob admission must judge
	// jobs that use them, as check does (a sample is exactly that). The
	// publisher is off so the only runtimes are the ones the cases create.
	components.RuntimeTemplateWebhook = false
	components.RuntimePublisher.Enabled = false
	components.RuntimeTests.Enabled = false
	components.NetworkPolicies.Enabled = false
	env = framework.StartSuite(context.Background(), framework.Options{Name: "differential", Components: &components,
		// Volcano's Queue CRD: the gang-scheduling samples hold Queues.
		ExtraCRDDirs: []string{framework.VolcanoCRDs()}})
	dropRuntimeTemplateWebhooks(ctx)
	checker = newChecker(ctx)
	createPoolRuntimes(ctx)
}, NodeTimeout(framework.SuiteStartTimeout))

// dropRuntimeTemplateWebhooks removes the (Cluster)TrainingRuntime entries
// from the installed ValidatingWebhookConfiguration: with the webhook off,
// the apiserver would otherwise fail every runtime create (failurePolicy Fail).
func dropRuntimeTemplateWebhooks(ctx context.Context) {
	GinkgoHelper()
	var list admissionv1.ValidatingWebhookConfigurationList
	Expect(env.Client.List(ctx, &list)).To(Succeed())
	dropped := 0
	for i := range list.Items {
		cfg := &list.Items[i]
		n := len(cfg.Webhooks)
		cfg.Webhooks = slices.DeleteFunc(cfg.Webhooks, func(w admissionv1.ValidatingWebhook) bool {
			return w.Name == "vclustertrainingruntime.mpiguard.io" || w.Name == "vtrainingruntime.mpiguard.io"
		})
		if len(cfg.Webhooks) != n {
			dropped += n - len(cfg.Webhooks)
			Expect(env.Client.Update(ctx, cfg)).To(Succeed())
		}
	}
	Expect(dropped).To(Equal(2), fmt.Sprintf("want the two runtime template webhooks in the shipped configuration, dropped %d", dropped))
}
