package render

import (
	"context"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// TestForgetValidation: what ValidateAsAPIServer built is dropped, and a
// validation after it builds it again and judges as before.
func TestForgetValidation(t *testing.T) {
	job := func() map[string]any {
		return map[string]any{
			"apiVersion": trainer.GroupVersion.String(),
			"kind":       trainer.TrainJobKind,
			"metadata":   map[string]any{"name": "Capitals", "namespace": "team-a"},
			"spec":       map[string]any{"runtimeRef": map[string]any{"name": "torch"}},
		}
	}
	before, err := ValidateAsAPIServer(context.Background(), trainer.TrainJobKind, job())
	if err != nil || len(before) == 0 {
		t.Fatalf("a TrainJob named in capitals: errors %v, %v; want the name refused", before, err)
	}
	if _, built := validatorsOf.Load(trainJobSchema); !built {
		t.Fatal("no validators kept after a validation")
	}
	ForgetValidation()
	if _, built := validatorsOf.Load(trainJobSchema); built {
		t.Fatal("the validators are still kept after ForgetValidation")
	}
	after, err := ValidateAsAPIServer(context.Background(), trainer.TrainJobKind, job())
	if err != nil {
		t.Fatal(err)
	}
	if before.ToAggregate().Error() != after.ToAggregate().Error() {
		t.Errorf("after ForgetValidation: %v; before: %v", after, before)
	}
}
