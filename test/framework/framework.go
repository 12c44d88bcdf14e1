// Package framework runs mpiguard's integration tests against a real control
// plane: the local cluster of internal/devcluster (what `make run`
// starts too), with the Ginkgo helpers the suites share on top. The cluster
// lives outside test/ so that a change to a test helper cannot break `make
// run`; this package only adds to it.
package framework

import (
	"context"

	"github.com/mpiguard/mpiguard/internal/devcluster"
)

// Env is a running integration environment: devcluster's, with the suites'
// Ginkgo helpers as methods.
type Env struct {
	*devcluster.Env
}

// The cluster's types the suites use, under their old names.
type (
	// Options configures the cluster a suite starts.
	Options = devcluster.Options
	// Replica is one mpiguard manager of the cluster, as one pod of the Deployment.
	Replica = devcluster.Replica
	// Kueue is a running Kueue manager.
	Kueue = devcluster.Kueue
	// TestCA is a throwaway certificate authority for tests of client
	// certificate authentication.
	TestCA = devcluster.TestCA
	// Workloads makes a suite's pods really run when set in Options (KWOK
	// nodes, kube-scheduler, kube-controller-manager, JobSet and Trainer).
	Workloads = devcluster.Workloads
)

// The cluster's constants and helpers the suites use, under their old names.
const (
	SuiteStartTimeout = devcluster.SuiteStartTimeout
	WebhookClientName = devcluster.WebhookClientName
)

// The cluster's helpers the suites use, under their old names.
var (
	RepoRoot                    = devcluster.RepoRoot
	BinaryAssets                = devcluster.BinaryAssets
	TrainerController           = devcluster.TrainerController
	KustomizeBuild              = devcluster.KustomizeBuild
	CertManagerCRDs             = devcluster.CertManagerCRDs
	TrainerRuntimes             = devcluster.TrainerRuntimes
	KueueCRDs                   = devcluster.KueueCRDs
	KueueBinary                 = devcluster.KueueBinary
	SchedulerPluginsPodGroupCRD = devcluster.SchedulerPluginsPodGroupCRD
	ProcessesRunning            = devcluster.ProcessesRunning
	ReadProcStat                = devcluster.ReadProcStat
	NewTestCA                   = devcluster.NewTestCA
)

// Start brings up the cluster (devcluster.Start) for a test.
func Start(ctx context.Context, opts Options) (*Env, error) {
	e, err := devcluster.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Env{Env: e}, nil
}
