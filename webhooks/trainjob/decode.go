package trainjob

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/internal/render"
)

// trainJobDecoder is controller-runtime's admission decoder over a scheme
// that knows the Trainer types: it refuses an empty object, an object of
// another kind or version, and a value of the wrong type with an error
// naming the field (e.g. "cannot unmarshal number 1e+30 into Go struct field
// TrainJobSpec.spec.activeDeadlineSeconds of type int64").
var trainJobDecoder = func() admission.Decoder {
	scheme := runtime.NewScheme()
	utilruntime.Must(trainer.AddToScheme(scheme))
	return admission.NewDecoder(scheme)
}()

// decodeTrainJob reads a TrainJob (an AdmissionRequest's object or
// oldObject) with controller-runtime's decoder, once no string in it would
// make the decoder spend minutes on a quantity (render.ScreenQuantities).
func decodeTrainJob(raw runtime.RawExtension, into *trainer.TrainJob) error {
	if err := render.ScreenQuantities(raw.Raw); err != nil {
		return err
	}
	return trainJobDecoder.DecodeRaw(raw, into)
}
