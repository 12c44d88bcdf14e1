// Package runtimes holds end-to-end tests of mpiguard's runtime template manager
// against a real kube-apiserver: the curated runtimes publisher, the runtime
// template webhook (called by the apiserver over TLS) and the RuntimeTest smoke
// test, driven through the Kubeflow Trainer's own controllers running in the test binary.
package runtimes

import (
	"context"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

func TestRuntimes(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Runtimes")
}

var _ = BeforeSuite(func(ctx context.Context) {
	components := app.DefaultOptions()
	// Re-check running smoke tests every second so the timeout case ends quickly.
	components.RuntimeTests.Poll = time.Second
	// The coscheduling PodGroup CRD lets the Trainer's coscheduling plugin gang the
	// curated -coscheduling variants for real.
	podGroupCRD, err := framework.SchedulerPluginsPodGroupCRD()
	Expect(err).NotTo(HaveOccurred())
	env = framework.StartSuite(context.Background(), framework.Options{
		Name:         "runtimes",
		Components:   &components,
		ExtraCRDDirs: []string{podGroupCRD},
		Setup:        framework.TrainerController,
		// Jobs really create pods (or FailedCreate events) where a spec runs
		// JobSet's controller too (env.JobSetController); elsewhere no Job exists.
		KubeControllers: []string{"job"},
	})
	// Specs use the curated runtimes; the publisher applies them asynchronously
	// after the manager starts (its own spec checks the exact set).
	all, err := catalog.Load()
	Expect(err).NotTo(HaveOccurred())
	for _, rt := range all {
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Name: rt.Name}, &trainer.ClusterTrainingRuntime{})
		}, timeout, interval).Should(Succeed(), "curated runtime %s published", rt.Name)
	}
}, NodeTimeout(framework.SuiteStartTimeout))
