// Package convert proves `mpiguard convert` against the real thing: for the
// MPI Operator's own example MPIJobs and the hand-written edge cases
// (internal/convert/testdata), the converted TrainingRuntime and TrainJob are
// accepted by a real kube-apiserver with the Trainer's CRDs and mpiguard's
// webhooks (server-side dry run), mpiguard's webhook decides the TrainJob as
// convert's offline judgement said, and the Kubeflow Trainer's own controller
// builds from them a JobSet whose Launcher and Workers are the pods the MPI
// Operator v0.6.0 would create (counts, Slots per worker in the hostfile,
// image, command, resources, restart and scheduling fields).
package convert

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

func TestConvert(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Convert")
}

var _ = BeforeSuite(func(ctx context.Context) {
	env = framework.StartSuite(context.Background(), framework.Options{
		Name: "convert",
		// The Volcano PodGroup CRD: a converted runtime of a Volcano gang.
		ExtraCRDDirs: []string{framework.VolcanoCRDs()},
		Setup:        framework.TrainerController,
	})
}, NodeTimeout(framework.SuiteStartTimeout))
