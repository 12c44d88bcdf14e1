// Package replicas tests mpiguard as it ships: two replicas (the Deployment's
// two pods) behind one webhook endpoint, with leader election on, so that the
// guarantees that must hold across replicas, quota first, are proven where a
// single manager would hide their absence.
package replicas

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

func TestReplicas(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Replicas")
}

var _ = BeforeSuite(func(ctx context.Context) {
	env = framework.StartSuite(context.Background(), framework.Options{Name: "replicas", Replicas: 2})
}, NodeTimeout(framework.SuiteStartTimeout))

// One ordered container, since the failover spec stops a replica for good and
// must run last; ContinueOnFailure keeps a failed spec from skipping the rest.
var _ = Describe("two mpiguard replicas behind one webhook endpoint", Ordered, ContinueOnFailure, func() {
	topologySpecs()
	faultSpecs()
	quotaSpecs()
	failoverSpecs()
})
