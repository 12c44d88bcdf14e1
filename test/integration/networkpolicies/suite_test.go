// Package networkpolicies holds end-to-end tests of mpiguard's per-job
// NetworkPolicy controller against a real kube-apiserver: TrainJobs and runtimes
// go in through the apiserver (and mpiguard's admission webhooks), and the tests
// read the NetworkPolicies, events and metrics that come out.
package networkpolicies

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/test/framework"
)

// scaleBaselineEnv, with the scale run, starts mpiguard with the NetworkPolicy
// controller off: the same jobs through the same webhooks, so the difference in
// memory between the two runs is the controller's own.
const scaleBaselineEnv = "MPIGUARD_NETPOL_SCALE_BASELINE"

var env *framework.Env

func TestNetworkPolicies(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "NetworkPolicies")
}

var _ = BeforeSuite(func(ctx context.Context) {
	opts := framework.Options{Name: "networkpolicies"}
	if os.Getenv(scaleBaselineEnv) == "true" {
		components := app.DefaultOptions()
		components.NetworkPolicies.Enabled = false
		opts.Components = &components
	}
	env = framework.StartSuite(context.Background(), opts)
}, NodeTimeout(framework.SuiteStartTimeout))
