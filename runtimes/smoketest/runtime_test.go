package smoketest

import (
	"context"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	api "github.com/mpiguard/mpiguard/api/v1alpha1"
)

// A runtime applied together with its RuntimeTest may not be in the cache
// when the test is first reconciled: the apiserver decides "not found", which
// ends the test, not the cache.
func TestRuntimeNotYetInTheCacheIsReadLive(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := trainer.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tr := &trainer.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "openmpi"},
		Spec:       trainer.TrainingRuntimeSpec{MLPolicy: &trainer.MLPolicy{MLPolicySource: trainer.MLPolicySource{MPI: &trainer.MPIMLPolicySource{}}}},
	}
	cache := fake.NewClientBuilder().WithScheme(scheme).Build() // has not seen it yet
	apiserver := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tr).Build()
	r := &Reconciler{client: cache, apiReader: apiserver}
	rt := &api.RuntimeTest{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "smoke"},
		Spec: api.RuntimeTestSpec{RuntimeRef: api.RuntimeRef{Kind: trainer.TrainingRuntimeKind, Name: "openmpi"}}}

	if _, _, err := r.runtime(ctx, rt); err != nil {
		t.Fatalf("runtime with the cache behind: %v; want the runtime read from the apiserver", err)
	}
	rt.Spec.RuntimeRef.Name = "missing"
	if _, _, err := r.runtime(ctx, rt); !apierrors.IsNotFound(err) {
		t.Fatalf("runtime of a runtime the apiserver does not have: %v; want not found", err)
	}
}
