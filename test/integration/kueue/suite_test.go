// Package kueue tests mpiguard as a Kueue AdmissionCheck against a real
// Kueue (built from the module go.mod pins, test/kueue/build.sh; v0.17.0,
// with its webhooks registered as an install does), the real
// Trainer controller, and mpiguard as it ships: two replicas behind one
// webhook endpoint. Kueue admits a TrainJob by writing it back, resumed; the
// specs prove that mpiguard's check decides that resume beforehand, with the
// state Kueue acts on (Ready, Retry, Rejected), and that the quota it
// promises is the quota the resume is given.
package kueue

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/test/framework"
)

// reservationGrace is how long a reservation is taken on trust before its
// resume must land (--reservation-grace).
const reservationGrace = 5 * time.Second

var (
	env *framework.Env
	kq  *framework.Kueue
)

func TestKueue(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Kueue")
}

var _ = BeforeSuite(func(ctx context.Context) {
	crds, err := framework.KueueCRDs()
	Expect(err).NotTo(HaveOccurred())
	components := app.DefaultOptions()
	// Kueue offers a Workload whose check said Retry again after this:
	// short, so a spec sees the retry that room in the quota lets through.
	components.KueueAdmissionCheck.RetryBackoff = time.Second
	components.KueueAdmissionCheck.MaxRetryBackoff = 2 * time.Second
	// Short, so a spec sees a Workload wait past it.
	components.Policies.ReservationGrace = reservationGrace
	env = framework.StartSuite(context.Background(), framework.Options{
		Name: "kueue", Replicas: 2, Components: &components,
		ExtraCRDDirs: []string{crds},
		// The real Trainer turns a resumed TrainJob into its JobSet.
		Setup: framework.TrainerController,
	})
	kq, err = env.StartKueue(context.Background())
	Expect(err).NotTo(HaveOccurred(), "starting Kueue")
	DeferCleanup(func() { Expect(kq.Stop()).To(Succeed()) })
	createKueueSetup(context.Background())
}, NodeTimeout(framework.SuiteStartTimeout))
