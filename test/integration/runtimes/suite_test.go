// Package runtimes holds end-to-end tests of mpiguard's runtime template manager
// against a real kube-apiserver: the curated runtimes publisher, the runtime
// template webhook (called by the apiserver over TLS) and the RuntimeTest smoke
// test, driven through the Kubeflow Trainer's own controllers running in-process.
package runtimes

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

func TestRuntimes(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Runtimes")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	components := app.DefaultOptions()
	// Re-check running smoke tests every second so the timeout case ends quickly.
	components.RuntimeTests.Poll = time.Second
	env = framework.StartSuite(context.Background(), framework.Options{
		Name:       "runtimes",
		Components: &components,
		Setup:      framework.TrainerController,
	})
}, NodeTimeout(framework.SuiteStartTimeout))
