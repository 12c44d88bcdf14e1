package trainjob

import (
	"context"
	"encoding/json"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

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
