package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/mpiguard/mpiguard/internal/engine"
)

// TestLabelPatchIsApply: the JSON patch of a label mutation adds exactly
// the labels Mutation.Apply adds, to a job without labels, with others, and
// with the label already set (kept).
func TestLabelPatchIsApply(t *testing.T) {
	m := &engine.Mutation{Labels: map[string]string{"kueue.x-k8s.io/priority-class": "ml-low"}}
	for name, raw := range map[string]string{
		"no labels":        `{"metadata":{"name":"a"},"spec":{"runtimeRef":{"name":"r"}}}`,
		"empty labels":     `{"metadata":{"name":"a","labels":{}},"spec":{"runtimeRef":{"name":"r"}}}`,
		"other labels":     `{"metadata":{"name":"a","labels":{"team":"vision"}},"spec":{"runtimeRef":{"name":"r"}}}`,
		"the label is set": `{"metadata":{"name":"a","labels":{"kueue.x-k8s.io/priority-class":"ml-high"}},"spec":{"runtimeRef":{"name":"r"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var job trainer.TrainJob
			if err := json.Unmarshal([]byte(raw), &job); err != nil {
				t.Fatal(err)
			}
			ops, err := patchOperations([]byte(raw), &job, m)
			if err != nil {
				t.Fatal(err)
			}
			patched := applyPatch(t, []byte(raw), ops)
			var got trainer.TrainJob
			if err := json.Unmarshal(patched, &got); err != nil {
				t.Fatal(err)
			}
			want := job.DeepCopy()
			m.Apply(want)
			if diff := cmp.Diff(want.Labels, got.Labels); diff != "" {
				t.Errorf("labels (-Apply +patch):\n%s", diff)
			}
		})
	}
}
