// Package admission holds end-to-end tests of mpiguard's TrainJob webhooks: the
// real kube-apiserver calls them over TLS and the tests read the outcome back
// from the apiserver.
package admission

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

// maxUnconfirmed is the suite's --max-unconfirmed-reservations: above the
// most creates any other spec has admitted in one namespace (10).
const maxUnconfirmed = 12

func TestAdmission(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Admission")
}

var _ = BeforeSuite(func(ctx context.Context) {
	components := app.DefaultOptions()
	// A short grace, so specs see a reservation whose TrainJob never appeared
	// released without waiting the production default.
	components.Policies.ReservationGrace = reservationGrace
	components.Policies.MaxUnconfirmedReservations = maxUnconfirmed
	// Metrics: metrics_test.go scrapes /metrics as Prometheus would.
	env = framework.StartSuite(context.Background(), framework.Options{Name: "admission", Components: &components, Metrics: true,
		// Volcano's Queue CRD for the gang-scheduling specs (gang_test.go).
		ExtraCRDDirs: []string{framework.VolcanoCRDs()}})
}, NodeTimeout(framework.SuiteStartTimeout))
