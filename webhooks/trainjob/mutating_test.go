package trainjob

import (
	"context"
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// testAdmitter is an admitter reading the given objects (a pure unit test:
// a fake client stands in for the cache), with the embedded policies.
func testAdmitter(t *testing.T, objs ...runtime.Object) *admitter {
	t.Helper()
	ctx := context.Background()
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(trainer.AddToScheme(scheme))
	p, err := pipeline.NewDefault(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithRuntimeObjects(objs...).Build()
	return &admitter{cluster: cluster{Reader: c}, pipeline: p}
}

// TestMutationKeepsUnknownFields: the mutating webhook's patch touches only
// the paths mpiguard owns, so fields the compiled Trainer types do not know (a
// newer Trainer's) survive it, wherever they are. The patch used to be a diff
// against the typed TrainJob re-encoded, which removed each of them.
func TestMutationKeepsUnknownFields(t *testing.T) {
	rt := fixtures.MPIRuntime("openmpi").Cluster()
	if err := render.ApplyDefaults(rt); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	a := testAdmitter(t, rt, ns)

	for _, tc := range []struct {
		name string
		raw  string
		// want is raw with the mutation applied, as JSON.
		want string
	}{{
		name: "no runtime patches",
		raw: `{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"run","namespace":"team-a"},
			"spec":{"runtimeRef":{"name":"openmpi"},"futureSpecField":{"a":1},
				"trainer":{"numNodes":1,"futureTrainerField":"keep"}}}`,
		want: `{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"run","namespace":"team-a"},
			"spec":{"runtimeRef":{"name":"openmpi"},"futureSpecField":{"a":1},
				"trainer":{"numNodes":1,"futureTrainerField":"keep"},
				"activeDeadlineSeconds":86400,
				"runtimePatches":[` + ownEntry + `]}}`,
	}, {
		name: "another manager's patch is kept as sent",
		raw: `{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"run","namespace":"team-a"},
			"spec":{"runtimeRef":{"name":"openmpi"},"trainer":{"numNodes":1},"activeDeadlineSeconds":3600,
				"runtimePatches":[{"manager":"team.example.com/tools","futurePatchField":true,
					"trainingRuntimeSpec":{"futureRuntimeField":"x","template":{"spec":{"replicatedJobs":[{"name":"node","futureRJField":1}]}}}}]}}`,
		want: `{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"run","namespace":"team-a"},
			"spec":{"runtimeRef":{"name":"openmpi"},"trainer":{"numNodes":1},"activeDeadlineSeconds":3600,
				"runtimePatches":[{"manager":"team.example.com/tools","futurePatchField":true,
					"trainingRuntimeSpec":{"futureRuntimeField":"x","template":{"spec":{"replicatedJobs":[{"name":"node","futureRJField":1}]}}}},
					` + ownEntry + `]}}`,
	}, {
		name: "mpiguard's stale entry is replaced in place",
		raw: `{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"run","namespace":"team-a"},
			"spec":{"runtimeRef":{"name":"openmpi"},"trainer":{"numNodes":1},"activeDeadlineSeconds":3600,"futureSpecField":[1],
				"runtimePatches":[{"manager":"mpiguard.io/admission","trainingRuntimeSpec":{}},
					{"manager":"team.example.com/tools","futurePatchField":true}]}}`,
		want: `{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"run","namespace":"team-a"},
			"spec":{"runtimeRef":{"name":"openmpi"},"trainer":{"numNodes":1},"activeDeadlineSeconds":3600,"futureSpecField":[1],
				"runtimePatches":[` + ownEntry + `,
					{"manager":"team.example.com/tools","futurePatchField":true}]}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "1", Operation: admissionv1.Create, Namespace: "team-a", Name: "run",
				Object: runtime.RawExtension{Raw: []byte(tc.raw)},
			}}
			resp := Mutator{a}.Handle(context.Background(), req)
			if !resp.Allowed {
				t.Fatalf("not allowed: %v", resp.Result)
			}
			ops, err := json.Marshal(resp.Patches)
			if err != nil {
				t.Fatal(err)
			}
			p, err := jsonpatch.DecodePatch(ops)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Apply([]byte(tc.raw))
			if err != nil {
				t.Fatalf("applying %s: %v", ops, err)
			}
			if diff := cmp.Diff(asAny(t, tc.want), asAny(t, string(got))); diff != "" {
				t.Errorf("patched TrainJob (-want +got):\n%s\npatch: %s", diff, ops)
			}
		})
	}
}

// ownEntry is mpiguard's entry for the two replicated jobs of fixtures.MPIRuntime
// with the embedded policies (istio-opt-out's labels).
const ownEntry = `{"manager":"mpiguard.io/admission","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[
	{"name":"launcher","template":{"spec":{"template":{"metadata":{"labels":{"istio.io/dataplane-mode":"none","sidecar.istio.io/inject":"false"}}}}}},
	{"name":"node","template":{"spec":{"template":{"metadata":{"labels":{"istio.io/dataplane-mode":"none","sidecar.istio.io/inject":"false"}}}}}}]}}}}`

func asAny(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	return v
}
