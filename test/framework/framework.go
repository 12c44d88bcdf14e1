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

// The cluster's types and helpers the suites use, under their old names.
type (
	Options = devcluster.Options
	Replica = devcluster.Replica
	Kueue   = devcluster.Kueue
	TestCA  = devcluster.TestCA
	// Workloads, in Options, makes a suite's pods really run (KWOK nodes,
	// kube-scheduler, kube-controller-manager, JobSet and Trainer).
	Workloads = devcluster.Workloads
)

const (
	SuiteStartTimeout = devcluster.SuiteStartTimeout
	WebhookClientName = devcluster.WebhookClientName
)

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
