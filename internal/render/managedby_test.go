package render

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainjobutil "github.com/kubeflow/trainer/v2/pkg/util/trainjob"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// TestRunsElsewhere: a job whose spec.managedBy is another controller than
// the Trainer (Kueue's MultiKueue) is rendered in full, and its view says no
// pod of it is created here.
func TestRunsElsewhere(t *testing.T) {
	r := renderer(t)
	for _, tc := range []struct {
		name      string
		managedBy *string
		want      bool
	}{
		{"no managedBy", nil, false},
		{"the Trainer", ptr.To(trainjobutil.TrainJobControllerName), false},
		{"MultiKueue", ptr.To(kueue.MultiKueueControllerName), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, rt := trainJob(numNodes(2), func(tj *trainer.TrainJob) { tj.Spec.ManagedBy = tc.managedBy }), mpiRuntime()
			if err := ApplyDefaults(rt, job); err != nil {
				t.Fatal(err)
			}
			view, err := r.Render(context.Background(), Input{TrainJob: job, Runtime: rt})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, view.RunsElsewhere); diff != "" {
				t.Errorf("RunsElsewhere (-want +got):\n%s", diff)
			}
			if view.Workers == nil || view.Workers.Pods != 2 {
				t.Errorf("the Workers are rendered as the job asks: %+v", view.Workers)
			}
		})
	}
}
