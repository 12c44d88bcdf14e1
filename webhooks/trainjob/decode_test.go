package trainjob

import (
	stdjson "encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// TestDecodeTrainJobMatchesTheSchemeDecoder: on randomly filled TrainJobs
// (every field, nil and set, odd strings) decodeTrainJob gives exactly what
// controller-runtime's admission decoder gives.
func TestDecodeTrainJobMatchesTheSchemeDecoder(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := trainer.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	decoder := admission.NewDecoder(scheme)
	filled := 0
	for seed := range int64(300) {
		f := fixtures.RandomFiller(seed)
		var job trainer.TrainJob
		f.Fill(&job)
		// Half the objects say what they are, as the apiserver's do; the
		// others leave it to the decoder.
		if seed%2 == 0 {
			job.TypeMeta = metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind}
		} else {
			job.TypeMeta = metav1.TypeMeta{}
		}
		if job.Spec.Trainer != nil && len(job.Spec.RuntimePatches) > 0 {
			filled++
		}
		raw, err := stdjson.Marshal(&job)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		want, got := &trainer.TrainJob{}, &trainer.TrainJob{}
		if err := decoder.DecodeRaw(runtime.RawExtension{Raw: raw}, want); err != nil {
			t.Fatalf("seed %d: controller-runtime: %v", seed, err)
		}
		if err := decodeTrainJob(runtime.RawExtension{Raw: raw}, got); err != nil {
			t.Fatalf("seed %d: decodeTrainJob: %v", seed, err)
		}
		if !equality.Semantic.DeepEqual(want, got) {
			t.Fatalf("seed %d: decodeTrainJob differs from controller-runtime's decoder (-controller-runtime +decodeTrainJob):\n%s", seed, cmp.Diff(want, got))
		}
	}
	if filled < 50 {
		t.Fatalf("only %d random TrainJobs had a trainer and runtime patches; fill deeper", filled)
	}
}

func TestDecodeTrainJobRejectsOtherObjects(t *testing.T) {
	for name, tc := range map[string]struct{ raw, want string }{
		"no object":       {``, "no object"},
		"not JSON":        {`{"apiVersion":`, ""},
		"another kind":    {`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainingRuntime"}`, "not a trainer.kubeflow.org/v1alpha1, Kind=TrainJob"},
		"another version": {`{"apiVersion":"trainer.kubeflow.org/v1","kind":"TrainJob"}`, "not a trainer.kubeflow.org/v1alpha1, Kind=TrainJob"},
	} {
		t.Run(name, func(t *testing.T) {
			err := decodeTrainJob(runtime.RawExtension{Raw: []byte(tc.raw)}, &trainer.TrainJob{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("decodeTrainJob(%q) = %v, want an error containing %q", tc.raw, err, tc.want)
			}
		})
	}
}

// TestDecodeErrorNamesTheField: a value of the wrong type is refused with a
// message naming the field (found by the hostile-input table: goccy said only
// "expected comma after object element" for activeDeadlineSeconds 1e+30).
func TestDecodeErrorNamesTheField(t *testing.T) {
	raw := []byte(`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"j"},"spec":{"activeDeadlineSeconds":1e+30,"runtimeRef":{"name":"r"}}}`)
	err := decodeTrainJob(runtime.RawExtension{Raw: raw}, &trainer.TrainJob{})
	if err == nil || !strings.Contains(err.Error(), "activeDeadlineSeconds") {
		t.Fatalf("error %v does not name spec.activeDeadlineSeconds", err)
	}
}
