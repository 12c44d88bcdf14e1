package runtimetemplate

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

func request(t *testing.T, op admissionv1.Operation, kind string, obj, old runtime.Object) admission.Request {
	t.Helper()
	raw := func(o runtime.Object) runtime.RawExtension {
		if o == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op,
		Kind:      metav1.GroupVersionKind{Group: trainer.GroupVersion.Group, Version: trainer.GroupVersion.Version, Kind: kind},
		Name:      "rt",
		Object:    raw(obj),
		OldObject: raw(old),
	}}
}

func TestHandle(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := trainer.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	v := NewValidator(admission.NewDecoder(scheme))

	good := &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "rt"}, Spec: *openMPISpec(t)}
	bad := good.DeepCopy()
	bad.Spec.MLPolicy.NumNodes = ptr.To[int32](3)
	badRelabelled := bad.DeepCopy()
	badRelabelled.Labels = map[string]string{"team": "a"}
	badDeleting := bad.DeepCopy()
	badDeleting.DeletionTimestamp = &metav1.Time{}
	badDeleting.Finalizers = nil
	noIstio := good.DeepCopy()
	noIstio.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels = nil // the node job (Workers)
	badConstraint := good.DeepCopy()
	badConstraint.Annotations = map[string]string{"mpiguard.io/max-workers": "lots"}
	oddImpl := good.DeepCopy()
	oddImpl.Labels = map[string]string{"mpiguard.io/mpi-implementation": "MVAPICH"}
	nsGood := &trainer.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "rt", Namespace: "team-a"}, Spec: good.Spec}
	nsBad := &trainer.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "rt", Namespace: "team-a"}, Spec: bad.Spec}

	type result struct {
		Allowed      bool
		Message      string // substring of the denial
		WarningCount int
	}
	cases := map[string]struct {
		req  admission.Request
		want result
	}{
		"create good": {
			req:  request(t, admissionv1.Create, "ClusterTrainingRuntime", good, nil),
			want: result{Allowed: true},
		},
		"create bad is denied": {
			req:  request(t, admissionv1.Create, "ClusterTrainingRuntime", bad, nil),
			want: result{Message: `ClusterTrainingRuntime "rt" is not a usable MPI runtime: spec.mlPolicy.numNodes: Invalid value: 3`},
		},
		"update that introduces a problem is denied": {
			req:  request(t, admissionv1.Update, "ClusterTrainingRuntime", bad, good),
			want: result{Message: "spec.mlPolicy.numNodes"},
		},
		"metadata-only update of an already bad runtime passes with warnings": {
			req:  request(t, admissionv1.Update, "ClusterTrainingRuntime", badRelabelled, bad),
			want: result{Allowed: true, WarningCount: 1},
		},
		"finalizer removal while deleting passes": {
			req:  request(t, admissionv1.Update, "ClusterTrainingRuntime", badDeleting, bad),
			want: result{Allowed: true, WarningCount: 1},
		},
		"missing Istio opt-out is a warning": {
			req:  request(t, admissionv1.Create, "ClusterTrainingRuntime", noIstio, nil),
			want: result{Allowed: true, WarningCount: 2},
		},
		"TrainingRuntime create good": {
			req:  request(t, admissionv1.Create, "TrainingRuntime", nsGood, nil),
			want: result{Allowed: true},
		},
		"TrainingRuntime update bad is denied (upstream only checks creates)": {
			req:  request(t, admissionv1.Update, "TrainingRuntime", nsBad, nsGood),
			want: result{Message: `TrainingRuntime "rt" is not a usable MPI runtime`},
		},
		"malformed constraint annotation is denied": {
			req:  request(t, admissionv1.Create, "ClusterTrainingRuntime", badConstraint, nil),
			want: result{Message: `metadata.annotations[mpiguard.io/max-workers]: Invalid value: "lots": must be a whole number of hostfile nodes`},
		},
		"unknown implementation label is a warning": {
			req:  request(t, admissionv1.Create, "ClusterTrainingRuntime", oddImpl, nil),
			want: result{Allowed: true, WarningCount: 1},
		},
		"delete is allowed": {
			req:  request(t, admissionv1.Delete, "ClusterTrainingRuntime", nil, bad),
			want: result{Allowed: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp := v.Handle(context.Background(), tc.req)
			got := result{Allowed: resp.Allowed, WarningCount: len(resp.Warnings)}
			if !resp.Allowed && resp.Result != nil && strings.Contains(resp.Result.Message, tc.want.Message) {
				got.Message = tc.want.Message
			} else if resp.Result != nil {
				got.Message = resp.Result.Message
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandleGarbage(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = trainer.AddToScheme(scheme)
	v := NewValidator(admission.NewDecoder(scheme))
	req := request(t, admissionv1.Create, "ClusterTrainingRuntime", nil, nil)
	req.Object = runtime.RawExtension{Raw: []byte(`{"spec": 7}`)}
	resp := v.Handle(context.Background(), req)
	if resp.Allowed || resp.Result == nil || resp.Result.Code != 400 {
		t.Fatalf("garbage must be rejected with 400, got %+v", resp.Result)
	}
}

// openMPISpec is the curated OpenMPI runtime's spec: a known-good base.
func openMPISpec(t *testing.T) *trainer.TrainingRuntimeSpec {
	t.Helper()
	all, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(all, func(rt *trainer.ClusterTrainingRuntime) bool { return rt.Name == "mpiguard-openmpi-v2" })
	if i < 0 {
		t.Fatal("no curated runtime mpiguard-openmpi-v2")
	}
	return all[i].Spec.DeepCopy()
}

// A quantity whose decoding would take hours (the CRD's pattern allows it)
// is refused, naming its field, before the typed decode.
func TestHandleRefusesQuantitiesThatTakeHoursToDecode(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = trainer.AddToScheme(scheme)
	v := NewValidator(admission.NewDecoder(scheme))
	req := request(t, admissionv1.Create, "TrainingRuntime", nil, nil)
	req.Object = runtime.RawExtension{Raw: []byte(`{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainingRuntime","metadata":{"name":"r","namespace":"team-a"},
		"spec":{"template":{"spec":{"replicatedJobs":[{"name":"node","template":{"spec":{"template":{"spec":{"containers":[{"name":"node","resources":{"requests":{"cpu":"1e-2147483647"}}}]}}}}}]}}}}`)}
	resp := v.Handle(context.Background(), req)
	if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "resources.requests.cpu") {
		t.Fatalf("want a refusal naming resources.requests.cpu, got %+v", resp.Result)
	}
}
