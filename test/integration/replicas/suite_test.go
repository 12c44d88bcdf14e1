// Package replicas tests mpiguard as it ships: two replicas (the Deployment's
// two pods) behind one webhook endpoint, with leader election on, so that the
// guarantees that must hold across replicas, quota first, are proven where a
// single manager would hide their absence.
package replicas

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

// reservationGrace is the suite's --reservation-grace.
const reservationGrace = 2 * time.Second

func TestReplicas(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Replicas")
}

// components are the replicas' settings, for a spec that restarts them.
var components app.Options

var _ = BeforeSuite(func(ctx context.Context) {
	components = app.DefaultOptions()
	// A short grace, so a reservation whose TrainJob never appeared is
	// released within a spec.
	components.Policies.ReservationGrace = reservationGrace
	env = framework.StartSuite(context.Background(), framework.Options{
		Name: "replicas", Replicas: 2, Components: &components,
		// As documented for production: the apiserver presents a client
		// certificate, mpiguard serves no one else (--client-ca).
		ClientAuth: true,
	})
}, NodeTimeout(framework.SuiteStartTimeout))

// One ordered container, since the failover and GPU-seconds specs stop
// replicas for good and must run last; ContinueOnFailure keeps a failed spec from skipping the rest.
var _ = Describe("two mpiguard replicas behind one webhook endpoint", Ordered, ContinueOnFailure, func() {
	topologySpecs()
	faultSpecs()
	quotaSpecs()
	deniedUpdateSpecs()
	clientAuthSpecs()
	outageSpecs()
	rolloutSpecs()
	failoverSpecs()
	gpuSecondsSpecs()
})
