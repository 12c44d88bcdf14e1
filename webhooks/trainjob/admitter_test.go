package trainjob

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/policies/engine"
)

func TestDenialMessage(t *testing.T) {
	job := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "big"}}
	got := denialMessage(job, []engine.Violation{
		{Policy: "aggregate-quota", Field: "spec.trainer", Message: "TrainJob needs 12 nvidia.com/gpu"},
		{Policy: "slots-gpus", Message: "no field"},
	})
	want := "TrainJob team-a/big violates 2 mpiguard policies:\n- [aggregate-quota] spec.trainer: TrainJob needs 12 nvidia.com/gpu\n- [slots-gpus] no field"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestOnlySuspends(t *testing.T) {
	job := func(suspend *bool, numNodes int32) *trainer.TrainJob {
		return &trainer.TrainJob{Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: "mpi"},
			Suspend:    suspend,
			Trainer:    &trainer.Trainer{NumNodes: &numNodes},
		}}
	}
	yes, no := new(true), new(false)
	for _, tc := range []struct {
		name     string
		old, job *trainer.TrainJob
		want     bool
	}{
		{"false to true", job(no, 2), job(yes, 2), true},
		{"unset to true", job(nil, 2), job(yes, 2), true},
		{"suspends and changes numNodes", job(no, 2), job(yes, 4), false},
		{"already suspended", job(yes, 2), job(yes, 2), false},
		{"resume", job(yes, 2), job(no, 2), false},
		{"unset to false", job(nil, 2), job(no, 2), false},
		{"no change", job(no, 2), job(no, 2), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, onlySuspends(tc.old, tc.job)); diff != "" {
				t.Errorf("onlySuspends (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSuspendingSkipsBothWebhooks: a review that only suspends a job is
// allowed by both webhooks without a patch and without reading anything (the
// admitter here has no cluster to read: reading would panic), whatever the
// policies say now.
func TestSuspendingSkipsBothWebhooks(t *testing.T) {
	raw := func(suspend bool) runtime.RawExtension {
		j := &trainer.TrainJob{
			TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "run"},
			Spec:       trainer.TrainJobSpec{RuntimeRef: trainer.RuntimeRef{Name: "mpi"}, Suspend: &suspend},
		}
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Update, Namespace: "team-a", Name: "run",
		Object: raw(true), OldObject: raw(false),
	}}
	a := &admitter{}
	for name, h := range map[string]admission.Handler{"validating": Validator{a}, "mutating": Mutator{a}} {
		resp := h.Handle(context.Background(), req)
		if !resp.Allowed || len(resp.Patches) > 0 || resp.PatchType != nil {
			t.Errorf("%s webhook: allowed %v, patches %v; want allowed without a patch (%v)", name, resp.Allowed, resp.Patches, resp.Result)
		}
	}
}
