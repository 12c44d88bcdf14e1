package trainjob

import (
	"bufio"
	"bytes"
	stdjson "encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// sampleTrainJobs returns, as JSON, the TrainJobs of the policy samples
// (policies/*/samples/*.yaml): the realistic jobs the fuzzers start from.
func sampleTrainJobs(tb testing.TB) [][]byte {
	tb.Helper()
	files, err := filepath.Glob("../../policies/*/samples/*.yaml")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no policy samples found (%v)", err)
	}
	var out [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				tb.Fatalf("%s: %v", file, err)
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				tb.Fatalf("%s: %v", file, err)
			}
			var meta metav1.TypeMeta
			if err := stdjson.Unmarshal(js, &meta); err == nil && meta.Kind == trainer.TrainJobKind {
				out = append(out, js)
			}
		}
	}
	return out
}

// fixtureTrainJob is a TrainJob as the apiserver sends it: defaulted runtimeRef,
// every field the policies read set.
func fixtureTrainJob() []byte {
	job := fixtures.TrainJob("team-a", "resnet", "openmpi").NumNodes(3).NumProcPerNode(4).
		Requests("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "4").Limits("nvidia.com/gpu", "4").
		Env("NCCL_DEBUG", "INFO").ActiveDeadlineSeconds(3600).Label("team", "a").Obj()
	raw, err := stdjson.Marshal(job)
	if err != nil {
		panic(err)
	}
	return raw
}

// reviewOf wraps a TrainJob in the AdmissionReview the apiserver would send
// for op (oldObject set on UPDATE).
func reviewOf(op admissionv1.Operation, object []byte) []byte {
	req := &admissionv1.AdmissionRequest{
		UID:       "705ab4f5-6393-11e8-b7cc-42010a800002",
		Kind:      metav1.GroupVersionKind{Group: trainer.GroupVersion.Group, Version: trainer.GroupVersion.Version, Kind: trainer.TrainJobKind},
		Resource:  metav1.GroupVersionResource{Group: trainer.GroupVersion.Group, Version: trainer.GroupVersion.Version, Resource: "trainjobs"},
		Name:      "resnet",
		Namespace: "team-a",
		Operation: op,
		UserInfo:  authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}},
		Object:    runtime.RawExtension{Raw: object},
		DryRun:    ptr.To(false),
	}
	if op == admissionv1.Update {
		req.OldObject = runtime.RawExtension{Raw: object}
	}
	body, err := stdjson.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		panic(err)
	}
	return body
}

// caseVariantKey says whether some object key in data differs only by case
// from a JSON field name of types. decodeTrainJob and decodeReview assume the
// apiserver's canonical keys (decode.go); on other keys goccy/go-json and
// encoding/json part ways, e.g. {"ApiVersion":"0"}: encoding/json reads it as
// apiVersion, goccy/go-json v0.10.6 ignores it
// (testdata/fuzz/FuzzDecodeTrainJob/8c87b83a8e4f65c5).
func caseVariantKey(data []byte, types ...reflect.Type) bool {
	exact, folded := map[string]bool{}, map[string]bool{}
	for _, t := range types {
		collectFieldNames(t, exact, map[reflect.Type]bool{})
	}
	for name := range exact {
		folded[strings.ToLower(name)] = true
	}
	type frame struct{ object, wantKey bool }
	var stack []frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	dec := stdjson.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch v := tok.(type) {
		case stdjson.Delim:
			switch v {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				stack[n-1].wantKey = false
				if !exact[v] && folded[strings.ToLower(v)] {
					return true
				}
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

func TestCaseVariantKey(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"ApiVersion":"0"}`:                            true,
		`{"apiVersion":"0","spec":{"trainer":{}}}`:      false,
		`{"spec":{"Trainer":{}}}`:                       true,
		`{"metadata":{"labels":{"team":"apiversion"}}}`: false,
		`{"metadata":{"labels":{"a":"b"}},"Kind":"x"}`:  true,
		`[{"numNodes":1},{"NumNodes":2}]`:               true,
		`{"spec":{"runtimePatches":[{"manager":"m"}]}}`: false,
		`{"spec":`: false,
	} {
		if got := caseVariantKey([]byte(raw), trainJobType); got != want {
			t.Errorf("caseVariantKey(%s) = %t, want %t", raw, got, want)
		}
	}
}

// collectFieldNames adds the JSON names of every struct field reachable from t.
func collectFieldNames(t reflect.Type, into map[string]bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case name == "" && !f.Anonymous:
			name = f.Name
		}
		if name != "" {
			into[name] = true
		}
		collectFieldNames(f.Type, into, seen)
	}
}
