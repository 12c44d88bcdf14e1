package trainjob

import (
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestDecodeTrainJobRefusesWhatIsNotATrainJob: what cannot be read as a
// TrainJob is refused with an error saying why (never silently read as an
// empty job), and a value of the wrong type names its field (the
// hostile-input table, test/fixtures/hostile.go, checks the same through the
// apiserver).
func TestDecodeTrainJobRefusesWhatIsNotATrainJob(t *testing.T) {
	for name, tc := range map[string]struct{ raw, want string }{
		"no object":            {``, "no content to decode"},
		"not JSON":             {`{"apiVersion":`, "json parse error"},
		"another kind":         {`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainingRuntime"}`, "unable to decode trainer.kubeflow.org/v1alpha1, Kind=TrainingRuntime"},
		"another version":      {`{"apiVersion":"trainer.kubeflow.org/v1","kind":"TrainJob"}`, `no kind "TrainJob" is registered for version "trainer.kubeflow.org/v1"`},
		"malformed apiVersion": {`{"apiVersion":"a/b/c","kind":"TrainJob"}`, "unexpected GroupVersion string: a/b/c"},
		"a quantity whose decoding takes hours": {`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"j"},"spec":{"runtimeRef":{"name":"r"},"trainer":{"resourcesPerNode":{"requests":{"nvidia.com/gpu":"1e-2147483647"}}}}}`,
			`spec.trainer.resourcesPerNode.requests[nvidia.com/gpu]: Invalid value: "1e-2147483647": a quantity with more than 300 digits or an exponent beyond ±999`},
		"the same, escaped": {`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"j"},"spec":{"runtimeRef":{"name":"r"},"trainer":{"resourcesPerNode":{"limits":{"cpu":"\u0031E-2147483647"}}}}}`,
			`spec.trainer.resourcesPerNode.limits.cpu: Invalid value: "1E-2147483647"`},
		"the same, as a number": {`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"j"},"spec":{"runtimeRef":{"name":"r"},"trainer":{"resourcesPerNode":{"limits":{"memory":1e-2147483647}}}}}`,
			`spec.trainer.resourcesPerNode.limits.memory: Invalid value: "1e-2147483647"`},
		"wrong type": {`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"j"},"spec":{"activeDeadlineSeconds":1e+30,"runtimeRef":{"name":"r"}}}`, "spec.activeDeadlineSeconds"},
	} {
		t.Run(name, func(t *testing.T) {
			err := decodeTrainJob(runtime.RawExtension{Raw: []byte(tc.raw)}, &trainer.TrainJob{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("decodeTrainJob(%q) = %v, want an error containing %q", tc.raw, err, tc.want)
			}
		})
	}
}

// TestDecodeTrainJobReadsTheObject: the apiserver's form and a bare kind
// (the apiVersion defaulted from the type asked for) are both read.
func TestDecodeTrainJobReadsTheObject(t *testing.T) {
	for name, raw := range map[string]string{
		"apiserver's form": `{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"j","namespace":"team-a"},"spec":{"runtimeRef":{"name":"r"},"trainer":{"numNodes":3}}}`,
		"kind only":        `{"kind":"TrainJob","metadata":{"name":"j","namespace":"team-a"},"spec":{"runtimeRef":{"name":"r"},"trainer":{"numNodes":3}}}`,
		"small exponents":  `{"kind":"TrainJob","metadata":{"name":"j","namespace":"team-a"},"spec":{"runtimeRef":{"name":"r"},"trainer":{"numNodes":3,"env":[{"name":"LR","value":"1e-5"}],"resourcesPerNode":{"requests":{"cpu":"1e-999","memory":"1e18"}}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var job trainer.TrainJob
			if err := decodeTrainJob(runtime.RawExtension{Raw: []byte(raw)}, &job); err != nil {
				t.Fatal(err)
			}
			if job.Name != "j" || job.Namespace != "team-a" || job.Spec.RuntimeRef.Name != "r" || job.Spec.Trainer == nil || *job.Spec.Trainer.NumNodes != 3 {
				t.Errorf("decoded %+v", job)
			}
		})
	}
}
