// Package lifecycle proves the quota guarantee for a TrainJob's whole life,
// not only at its create: resumes the Trainer builds from its runtime
// snapshot, names reused while a job lives, quotas created or not yet synced
// while admitted jobs wait for their pods. Two mpiguard replicas, as shipped,
// and the Trainer's own controller, which takes the snapshots.
package lifecycle

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

func TestLifecycle(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Lifecycle")
}

var _ = BeforeSuite(func(ctx context.Context) {
	components := app.DefaultOptions()
	env = framework.StartSuite(context.Background(), framework.Options{
		Name: "lifecycle", Replicas: 2, Components: &components,
		// The Trainer snapshots each job's runtime on its first reconcile
		// and builds every later JobSet from the snapshot.
		Setup: framework.TrainerController,
	})
}, NodeTimeout(framework.SuiteStartTimeout))
