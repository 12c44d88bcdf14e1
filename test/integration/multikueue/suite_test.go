// Package multikueue tests mpiguard on both sides of Kueue's MultiKueue with
// two control planes in one test process, each its own kube-apiserver and
// etcd: a manager cluster, where a TrainJob is queued and judged, and a
// worker cluster, where Kueue's copy of it runs. Each runs real Kueue
// (built from the module go.mod pins, v0.17.0, its webhooks registered as an
// install does), the real Trainer controller and mpiguard as it ships (two
// replicas behind one webhook endpoint); the manager's Kueue dispatches to
// the worker through a MultiKueueCluster whose kubeconfig Secret points at
// the worker's apiserver.
//
// It prints what it costs when it ends (cost_test.go); docs/kueue.md,
// "MultiKueue", records it. `make test-multikueue` runs it alone.
package multikueue

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/test/framework"
)

// The two clusters and their Kueue managers.
var (
	manager, worker     *framework.Env
	managerKq, workerKq *framework.Kueue
	// started is when BeforeSuite began: the suite's cost is reported from it.
	started time.Time
)

func TestMultiKueue(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "MultiKueue")
}

var _ = BeforeSuite(func(context.Context) {
	// Not the node's context: what starts here outlives BeforeSuite.
	ctx := context.Background()
	started = time.Now()
	crds, err := framework.KueueCRDs()
	Expect(err).NotTo(HaveOccurred())
	// Both as shipped: every component, two replicas; the Trainer's own
	// controller on each, so the manager's is seen to skip the job
	// (spec.managedBy) and the worker's to run Kueue's copy.
	opts := func(name string) framework.Options {
		return framework.Options{Name: name, Replicas: 2, ExtraCRDDirs: []string{crds}, Setup: framework.TrainerController}
	}
	worker = framework.StartSuite(ctx, opts("multikueue-worker"))
	second := opts("multikueue-manager")
	second.SecondCluster = true
	manager = framework.StartSuite(ctx, second)
	cost.planes = time.Since(started)

	workerKq, err = worker.StartKueue(ctx)
	Expect(err).NotTo(HaveOccurred(), "starting the worker's Kueue")
	DeferCleanup(func() { Expect(workerKq.Stop()).To(Succeed()) })
	managerKq, err = manager.StartKueue(ctx)
	Expect(err).NotTo(HaveOccurred(), "starting the manager's Kueue")
	DeferCleanup(func() { Expect(managerKq.Stop()).To(Succeed()) })
	cost.kueues = time.Since(started)

	createWorkerSetup(ctx)
	createManagerSetup(ctx)
	cost.ready = time.Since(started)
}, NodeTimeout(framework.SuiteStartTimeout))
