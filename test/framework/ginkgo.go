package framework

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// EventuallyTimeout is the integration suites' default for Eventually.
const EventuallyTimeout = 30 * time.Second

// anySpecFailed is set by the reporter below so a suite keeps the control
// plane's logs when something failed and removes them when all passed.
var anySpecFailed atomic.Bool

var _ = ginkgo.ReportAfterEach(func(r ginkgo.SpecReport) {
	if r.Failed() {
		anySpecFailed.Store(true)
	}
})

// StartSuite starts an Env from a Ginkgo BeforeSuite and stops it when the suite
// ends, keeping the control plane's logs if any spec failed. mpiguard's logs go
// to the GinkgoWriter, shown for failed specs.
func StartSuite(ctx context.Context, opts Options) *Env {
	ginkgo.GinkgoHelper()
	ctrl.SetLogger(zap.New(zap.WriteTo(ginkgo.GinkgoWriter), zap.UseDevMode(true)))
	// Gomega's default (1 s) is tight for a controller's round trip on a busy
	// 2-core CI machine; a spec that means a shorter wait says so.
	gomega.SetDefaultEventuallyTimeout(EventuallyTimeout)
	gomega.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	env, err := Start(ctx, opts)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "starting the integration environment")
	ginkgo.DeferCleanup(func() {
		gomega.Expect(env.Stop(anySpecFailed.Load())).To(gomega.Succeed())
	})
	return env
}

// Namespace creates a fresh namespace for one spec and deletes it afterwards.
func (e *Env) Namespace(ctx context.Context, labels map[string]string) string {
	ginkgo.GinkgoHelper()
	ns, err := e.NewNamespace(ctx, labels)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(func(ctx context.Context) {
		gomega.Expect(e.DeleteNamespace(ctx, ns)).To(gomega.Succeed())
	})
	return ns.Name
}
