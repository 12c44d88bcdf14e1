package trainjob

import (
	"errors"
	"fmt"

	json "github.com/goccy/go-json"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
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
		return err
	}
	want := trainer.GroupVersion.WithKind(trainer.TrainJobKind)
	// As the scheme decoder does, an object that does not say what it is is
	// taken for the type asked for.
	if gvk := into.GroupVersionKind(); !gvk.Empty() && gvk != want {
		return fmt.Errorf("the object is a %s, not a %s", gvk, want)
	}
	return nil
}
