// Package auditlog tests that mpiguard's decisions reach the cluster's audit
// trail: a real kube-apiserver, started with an audit policy and an audit log
// file as a cluster's is, writes the audit annotations of mpiguard's answers
// beside each request; deletions of TrainJobs are in mpiguard's decision log
// with the user, and never blocked while mpiguard is down.
package auditlog

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

// auditPolicy is the audit policy of docs/operations.md ("mpiguard in the
// apiserver's audit log"): Metadata level carries the webhooks' annotations.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  resources:
  - group: trainer.kubeflow.org
    resources: [trainjobs, trainingruntimes, clustertrainingruntimes]
- level: None
`

func TestAuditLog(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "AuditLog")
}

var _ = BeforeSuite(func(ctx context.Context) {
	components := app.DefaultOptions()
	env = framework.StartSuite(context.Background(), framework.Options{Name: "auditlog", Components: &components, AuditPolicy: auditPolicy})
}, NodeTimeout(framework.SuiteStartTimeout))
