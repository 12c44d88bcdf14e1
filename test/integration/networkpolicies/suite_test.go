// Package networkpolicies holds end-to-end tests of mpiguard's per-job
// NetworkPolicy controller against a real kube-apiserver: TrainJobs and runtimes
// go in through the apiserver (and mpiguard's admission webhooks), and the tests
// read the NetworkPolicies, events and metrics that come out.
package networkpolicies

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

func TestNetworkPolicies(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "NetworkPolicies")
}

var _ = BeforeSuite(func(ctx context.Context) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	env = framework.StartSuite(context.Background(), framework.Options{Name: "networkpolicies"})
}, NodeTimeout(framework.SuiteStartTimeout))
