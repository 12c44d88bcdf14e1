// Package follow tests the job follower (internal/follow), `mpiguard
// explain` and the README's install verification on the local cluster where
// pods really run: kube-scheduler,
// kube-controller-manager, the JobSet and Trainer controllers, and KWOK
// nodes whose stages (test/kwok/stages) make annotated pods fail as a
// kubelet would report it.
package follow

import (
	"context"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

// curated is the runtime the specs' runtimes copy.
const curated = "mpiguard-openmpi-v2"

func TestFollow(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Follow")
}

var _ = BeforeSuite(func(ctx context.Context) {
	components := app.DefaultOptions()
	Expect(components.Follow.Enabled).To(BeTrue(), "the follower is on by default")
	env = framework.StartSuite(context.Background(), framework.Options{
		Name:       "follow",
		Components: &components,
		// 4 nodes of 8 GPUs: a Launcher and 6 Workers of 8 GPUs do not fit.
		Workloads: &framework.Workloads{Nodes: 4, GPUsPerNode: 8},
		// Served as `mpiguard serve` does, for the scrape spec.
		Metrics: true,
		// The shipped Deployment's pods run on the KWOK nodes and it becomes
		// Available, as the README's install verification waits for.
		KubeControllers: []string{"deployment", "replicaset"},
	})
	Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Name: curated}, &trainer.ClusterTrainingRuntime{})
	}, 2*time.Minute).Should(Succeed(), "curated runtime %s published", curated)
}, NodeTimeout(framework.SuiteStartTimeout))
