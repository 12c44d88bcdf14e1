// Package scheme is the API scheme of every group mpiguard reads and
// writes, in a package of its own so that a binary that only talks to the
// cluster (mpiguard check --from-cluster, the check-only build) links it
// without the manager.
package scheme

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	reportsv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	mpiguardv1alpha1 "github.com/mpiguard/mpiguard/api/v1alpha1"
)

// builders are the API groups mpiguard reads and writes. Components with
// API types of their own add them here.
var builders = []func(*runtime.Scheme) error{
	clientgoscheme.AddToScheme,
	trainer.AddToScheme,
	jobsetv1alpha2.AddToScheme,
	mpiguardv1alpha1.AddToScheme, // mpiguard.io: QuotaReservation, RuntimeTest
	reportsv1alpha1.Install,
	kueuev1beta2.AddToScheme,
	volcanov1beta1.AddToScheme, // Volcano Queues, read for Volcano gangs (internal/gang)
}

// New returns a new scheme with every API group mpiguard uses.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range builders {
		utilruntime.Must(add(s))
	}
	return s
}
