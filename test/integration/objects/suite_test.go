// Package objects proves the object-count part of the quota guarantee
// against a real kube-apiserver: the Trainer's and JobSet's own controllers
// create what a TrainJob makes besides pods (its JobSet, a Job per replica
// of each replicated job, the headless Service, the SSH Secret, the hostfile
// and runtime snapshot ConfigMaps), kube-controller-manager's job controller
// creates the pods and its resourcequota controller keeps the quotas'
// status.used, as in a cluster. A job mpiguard admits under count/* quotas
// gets every object created; the next that would not fit is refused at
// submit.
package objects

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

const (
	timeout  = 60 * time.Second
	interval = 200 * time.Millisecond
)

func TestObjects(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Objects")
}

var _ = BeforeSuite(func(ctx context.Context) {
	components := app.DefaultOptions()
	env = framework.StartSuite(context.Background(), framework.Options{
		Name: "objects", Components: &components,
		Setup: framework.TrainerController,
		// Jobs create pods (so admitted jobs' reservations are released
		// once their pods exist), and the quota controller counts every
		// object in status.used, as in a cluster.
		KubeControllers: []string{"job", "resourcequota"},
	})
}, NodeTimeout(framework.SuiteStartTimeout))
