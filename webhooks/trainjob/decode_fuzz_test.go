package trainjob

import (
	stdjson "encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// FuzzDecodeTrainJob decodes arbitrary objects with decodeTrainJob. For every
// object:
//   - no panic;
//   - on valid JSON in valid UTF-8 with the field names' case, goccy/go-json
//     reads what encoding/json (which it stands in for) reads: the same
//     TrainJob, and an error exactly when encoding/json has one;
//   - on the canonical form of the object (what the apiserver sends: the
//     TrainJob either decoder reads, written back by encoding/json),
//     decodeTrainJob gives exactly what controller-runtime's admission
//     decoder gives, or fails exactly when it fails.
//
// The raw object is not compared with the scheme decoder directly: it matches
// keys case-sensitively and encoding/json does not, a difference the
// apiserver's canonical JSON never shows.
func FuzzDecodeTrainJob(f *testing.F) {
	for _, job := range sampleTrainJobs(f) {
		f.Add(job)
	}
	f.Add(fixtureTrainJob())
	for seed := range int64(6) {
		f.Add(randomTrainJob(seed))
	}
	for _, raw := range []string{
		`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainingRuntime"}`,
		// A kind without an apiVersion: decodeTrainJob refused it, the scheme
		// decoder reads it (fixed in decode.go).
		`{"kind":"TrainJob","spec":{"trainer":{"numNodes":2,"resourcesPerNode":{"requests":{"cpu":"500m"}}}}}`,
		// A malformed apiVersion: taken for none after that fix (fixed too).
		`{"apiVersion":"a/b/c","kind":"TrainJob"}`,
		`{"apiVersion":"trainer.kubeflow.org","kind":"TrainJob"}`,
		`{"apiVersion":"trainer.kubeflow.org/","kind":"TrainJob"}`,
		`{"spec":{"runtimePatches":[{"manager":"x.io/y","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[{"name":"node"}]}}}}]}}`,
		`null`,
		`[]`,
		`{"apiVersion":`,
	} {
		f.Add([]byte(raw))
	}
	scheme := runtime.NewScheme()
	if err := trainer.AddToScheme(scheme); err != nil {
		f.Fatal(err)
	}
	decoder := admission.NewDecoder(scheme)
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := &trainer.TrainJob{}
		gotErr := decodeTrainJob(runtime.RawExtension{Raw: raw}, got)

		// goccy/go-json v0.10.6 reads some invalid JSON (a missing colon:
		// testdata/fuzz/FuzzDecodeTrainJob/0040d0d650279093) where encoding/json
		// fails, keeps invalid UTF-8 in strings where encoding/json reads
		// U+FFFD, and matches keys that differ from a field name by case
		// otherwise (caseVariantKey). The apiserver only sends valid JSON in
		// valid UTF-8 with its canonical keys, so other input is only required
		// not to crash, and is compared in its canonical form below.
		if ref, refErr := referenceDecode(raw); stdjson.Valid(raw) && utf8.Valid(raw) && !caseVariantKey(raw, trainJobType) {
			if (gotErr == nil) != (refErr == nil) {
				t.Fatalf("decodeTrainJob error %v, encoding/json error %v\nobject: %q", gotErr, refErr, raw)
			}
			if gotErr == nil && !equality.Semantic.DeepEqual(ref, got) {
				t.Fatalf("decodeTrainJob reads another TrainJob than encoding/json (-encoding/json +decodeTrainJob):\n%s\nobject: %q", cmp.Diff(ref, got), raw)
			}
		}

		// What either decoder read, written back by encoding/json, is read
		// alike by both.
		var read []*trainer.TrainJob
		if gotErr == nil {
			read = append(read, got)
		}
		if want := (&trainer.TrainJob{}); len(raw) > 0 && decoder.DecodeRaw(runtime.RawExtension{Raw: raw}, want) == nil {
			read = append(read, want)
		}
		for _, job := range read {
			canonical, err := stdjson.Marshal(job)
			if err != nil && !stdjson.Valid(raw) {
				// goccy/go-json passes invalid JSON on to raw fields
				// (managedFields' fieldsV1), which then do not encode:
				// testdata/fuzz/FuzzDecodeTrainJob/f4216157c11d6b3b.
				continue
			}
			if err != nil {
				t.Fatalf("encoding the decoded TrainJob: %v", err)
			}
			want, got := &trainer.TrainJob{}, &trainer.TrainJob{}
			wantErr := decoder.DecodeRaw(runtime.RawExtension{Raw: canonical}, want)
			gotErr := decodeTrainJob(runtime.RawExtension{Raw: canonical}, got)
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("on canonical JSON, controller-runtime's decoder error %v, decodeTrainJob error %v\ncanonical: %s", wantErr, gotErr, canonical)
			}
			if wantErr == nil && !equality.Semantic.DeepEqual(want, got) {
				t.Fatalf("decodeTrainJob differs from controller-runtime's decoder (-controller-runtime +decodeTrainJob):\n%s\ncanonical: %s", cmp.Diff(want, got), canonical)
			}
		}
	})
}

var trainJobType = reflect.TypeFor[trainer.TrainJob]()

// referenceDecode is decodeTrainJob with encoding/json.
func referenceDecode(raw []byte) (*trainer.TrainJob, error) {
	if len(raw) == 0 {
		return nil, errors.New("no object")
	}
	job := &trainer.TrainJob{}
	if err := stdjson.Unmarshal(raw, job); err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(job.APIVersion)
	if err != nil {
		return nil, err
	}
	if want := trainer.GroupVersion.WithKind(trainer.TrainJobKind); withDefaults(gv.WithKind(job.Kind), want) != want {
		return nil, errors.New("another kind")
	}
	return job, nil
}

// randomTrainJob is a randomly filled TrainJob as
// TestDecodeTrainJobMatchesTheSchemeDecoder builds them.
func randomTrainJob(seed int64) []byte {
	var job trainer.TrainJob
	fixtures.RandomFiller(seed).Fill(&job)
	if seed%2 == 0 {
		job.TypeMeta = metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind}
	} else {
		job.TypeMeta = metav1.TypeMeta{}
	}
	raw, err := stdjson.Marshal(&job)
	if err != nil {
		panic(err)
	}
	return raw
}
