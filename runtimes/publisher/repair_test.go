package publisher

import (
	"context"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// TestEditRepairCountedWhenTheApplyLosesARace: the publisher repairs an edit with
// an update and then an apply. When the next edit lands between the two, the
// apply conflicts; the first repair must still be counted (and reported), and a
// retry after a write that changed no generation must not count it again.
func TestEditRepairCountedWhenTheApplyLosesARace(t *testing.T) {
	all, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := all[0]
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := trainer.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	live := want.DeepCopy()
	live.UID, live.Generation = "uid-1", 3
	live.Spec.MLPolicy.MPI.NumProcPerNode = ptr.To[int32](8) // someone's edit
	applies := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(live).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			applies++
			return apierrors.NewConflict(schema.GroupResource{Group: trainer.GroupVersion.Group, Resource: "clustertrainingruntimes"}, want.Name, nil)
		},
	}).Build()
	recorder := events.NewFakeRecorder(10)
	r := &Reconciler{
		client:   c,
		recorder: recorder,
		desired:  map[string]*trainer.ClusterTrainingRuntime{want.Name: want},
		// Our last write produced generation 2; the live 3 is someone's edit.
		written: map[string]writeMark{want.Name: {uid: "uid-1", generation: 2}},
	}
	repairs := func() float64 {
		var m dto.Metric
		if err := repairsTotal.WithLabelValues(want.Name, "edited").Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	before := repairs()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(want)}

	for round := 1; round <= 2; round++ {
		res, err := r.Reconcile(context.Background(), req)
		if err != nil || res.RequeueAfter != conflictRetry {
			t.Fatalf("round %d: Reconcile = %+v, %v; want a retry after the conflict", round, res, err)
		}
	}
	if applies != 2 {
		t.Errorf("applies = %d, want 2", applies)
	}
	var got trainer.ClusterTrainingRuntime
	if err := c.Get(context.Background(), req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	if n := ptr.Deref(got.Spec.MLPolicy.MPI.NumProcPerNode, 0); n != 1 {
		t.Errorf("numProcPerNode = %d after the repair, want 1", n)
	}
	// Round 2 found the generation of our own update (the apply's conflict came
	// from a write that changed no spec): one repair, not two.
	if got := repairs() - before; got != 1 {
		t.Errorf("edited repairs counted: %v, want 1", got)
	}
	if len(recorder.Events) != 1 {
		t.Fatalf("events: %d, want 1 (Restored)", len(recorder.Events))
	}
	if e := <-recorder.Events; e != "Warning Restored curated runtime "+want.Name+" was edited outside mpiguard and has been restored; change curated runtimes through mpiguard's release, or copy one under a new name" {
		t.Errorf("event = %q", e)
	}
}
