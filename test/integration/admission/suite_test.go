// Package admission holds end-to-end tests of mpiguard's TrainJob webhooks: the
// real kube-apiserver calls them over TLS and the tests read the outcome back
// from the apiserver.
package admission

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

func TestAdmission(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Admission")
}

var _ = BeforeSuite(func(ctx context.Context) {
	env = framework.StartSuite(context.Background(), framework.Options{Name: "admission"})
}, NodeTimeout(framework.SuiteStartTimeout))
