package trainjob

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
