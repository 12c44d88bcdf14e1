package trainjob

import (
	stdjson "encoding/json"
	"errors"
	"fmt"

	json "github.com/goccy/go-json"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// decodeTrainJob reads a TrainJob from an AdmissionReview, as
// admission.Decoder.DecodeRaw does (apiVersion and kind, when given, must be the TrainJob's).
// The apiserver sends the object in its canonical JSON form (its CRD schema has
// pruned unknown fields, so no key differs from a field name but by case), so
// it is decoded straight into the typed TrainJob with goccy/go-json: the
// scheme's universal decoder scans the document twice (once for apiVersion and
// kind, once for the object) with encoding/json, about 4% of a webhook's CPU
// under load. TestDecodeTrainJobMatchesTheSchemeDecoder checks both give the
// same object.
func decodeTrainJob(raw runtime.RawExtension, into *trainer.TrainJob) error {
	if len(raw.Raw) == 0 {
		return errors.New("the request carries no object")
	}
	if err := json.Unmarshal(raw.Raw, into); err != nil {
		// goccy's message can miss the field: for activeDeadlineSeconds 1e+30
		// it said "expected comma after object element". encoding/json's
		// names it ("cannot unmarshal number 1e+30 into Go struct field
		// TrainJobSpec.spec.activeDeadlineSeconds of type int64"); only
		// refused objects pay for the second decode.
		if stdErr := stdjson.Unmarshal(raw.Raw, &trainer.TrainJob{}); stdErr != nil {
			return stdErr
		}
		return err
	}
	// GroupVersionKind would read a malformed apiVersion as none at all.
	gv, err := schema.ParseGroupVersion(into.APIVersion)
	if err != nil {
		return err
	}
	want := trainer.GroupVersion.WithKind(trainer.TrainJobKind)
	if gvk := withDefaults(gv.WithKind(into.Kind), want); gvk != want {
		return fmt.Errorf("the object is a %s, not a %s", gvk, want)
	}
	return nil
}

// withDefaults fills in what the object does not say from the type asked
// for, as the scheme decoder does (apimachinery's gvkWithDefaults): a missing
// kind, a missing apiVersion, or a missing version of the same group. Without
// it, {"kind":"TrainJob"} was refused where the scheme decoder reads it, and
// with it, but without parsing the apiVersion first, a malformed one ("a/b/c")
// was taken for none (both found by FuzzDecodeTrainJob).
func withDefaults(gvk, want schema.GroupVersionKind) schema.GroupVersionKind {
	if gvk.Kind == "" {
		gvk.Kind = want.Kind
	}
	if gvk.Version == "" && (gvk.Group == "" || gvk.Group == want.Group) {
		gvk.Group, gvk.Version = want.Group, want.Version
	}
	return gvk
}
