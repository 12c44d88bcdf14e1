// Package audit tests the audit controller against a real kube-apiserver:
// stored TrainJobs and runtimes judged again when policies, quotas or
// runtimes change, and the results published as openreports.io Reports (the
// CRDs from the pinned module). mpiguard runs as it ships, two replicas with
// leader election, so the reports are written by the leader only while
// policy reloads reach every replica.
package audit

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

// auditWait bounds how long a spec waits for a triggered audit: a debounce
// (2 s) and one audit of a small namespace, with room for a busy machine.
// The suite's interval is far longer, so an audit seen within it was
// triggered by the change under test, not by the interval.
const auditWait = 30 * time.Second

func TestAudit(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Audit")
}

var _ = BeforeSuite(func(ctx context.Context) {
	components := app.DefaultOptions()
	components.Audit.Interval = time.Hour
	env = framework.StartSuite(context.Background(), framework.Options{Name: "audit", Replicas: 2, Components: &components,
		// Volcano's Queue CRD for the Volcano gang spec (gang_test.go).
		ExtraCRDDirs: []string{framework.VolcanoCRDs()}})
}, NodeTimeout(framework.SuiteStartTimeout))
