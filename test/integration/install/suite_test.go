// Package install runs the install commands the README and docs/operations.md
// show (make deploy, deploy-openshift, undeploy, undeploy-openshift) exactly as
// written, from the repository root, against a real kube-apiserver, as
// server-side dry-runs, and checks config/openshift: OpenShift's service CA in
// place of cert-manager, OpenShift's DNS and a ServiceMonitor. The apiserver
// starts without cert-manager's CRDs; the specs for config/default install them.
package install

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mpiguard/mpiguard/test/framework"
)

var (
	env *framework.Env
	// kubeconfig is an admin kubeconfig of the suite's apiserver, for kubectl.
	kubeconfig string
)

func TestInstall(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Install")
}

var _ = BeforeSuite(func(ctx context.Context) {
	monitoringCRDs, err := prometheusOperatorCRDs(ctx)
	Expect(err).NotTo(HaveOccurred())
	env = framework.StartSuite(context.Background(), framework.Options{
		Name:         "install",
		ExtraCRDDirs: monitoringCRDs,
		NoManager:    true,
	})
	user, err := env.Testenv.AddUser(envtest.User{Name: "install-admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kc, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(kubeconfig, kc, 0o600)).To(Succeed())
}, NodeTimeout(framework.SuiteStartTimeout))
