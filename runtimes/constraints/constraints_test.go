package constraints

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestParse(t *testing.T) {
	ann := func(k, v string) *field.Path { return field.NewPath("metadata", "annotations").Key(k) }
	cases := map[string]struct {
		annotations map[string]string
		want        Constraints
		wantErrs    field.ErrorList
	}{
		"none": {},
		"all four": {
			annotations: map[string]string{
				AnnotationMaxNodes:           "8",
				AnnotationMaxGPUsPerWorker:   " 4 ",
				AnnotationRequiredNodeLabels: "pool=gpu, nvidia.com/gpu.present",
				AnnotationAllowedNamespaces:  "team-a,ml-*",
				"unrelated":                  "x",
			},
			want: Constraints{
				MaxNodes:           ptrTo[int32](8),
				MaxGPUsPerWorker:   ptrTo[int64](4),
				RequiredNodeLabels: map[string]string{"pool": "gpu", "nvidia.com/gpu.present": ""},
				AllowedNamespaces:  []string{"team-a", "ml-*"},
			},
		},
		"zero GPUs is a limit, zero Workers is not": {
			annotations: map[string]string{AnnotationMaxWorkers: "0", AnnotationMaxGPUsPerWorker: "0"},
			want:        Constraints{MaxGPUsPerWorker: ptrTo[int64](0)},
			wantErrs:    field.ErrorList{field.Invalid(ann(AnnotationMaxWorkers, ""), "0", "")},
		},
		"garbage is reported, good ones are kept": {
			annotations: map[string]string{
				AnnotationMaxWorkers:         "eight",
				AnnotationMaxGPUsPerWorker:   "2",
				AnnotationRequiredNodeLabels: "bad key!=x",
				AnnotationAllowedNamespaces:  ", ,",
			},
			want: Constraints{MaxGPUsPerWorker: ptrTo[int64](2)},
			wantErrs: field.ErrorList{
				field.Invalid(ann(AnnotationMaxWorkers, ""), "eight", ""),
				field.Invalid(ann(AnnotationRequiredNodeLabels, ""), "bad key!=x", ""),
				field.Invalid(ann(AnnotationRequiredNodeLabels, ""), "bad key!=x", ""),
				field.Invalid(ann(AnnotationAllowedNamespaces, ""), ", ,", ""),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := Parse(tc.annotations)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("constraints (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErrs, errs, cmpopts.IgnoreFields(field.Error{}, "Detail"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMessage(t *testing.T) {
	_, errs := Parse(map[string]string{AnnotationMaxWorkers: "-3"})
	want := `metadata.annotations[mpiguard.io/max-workers]: Invalid value: "-3": must be a whole number of hostfile nodes (spec.trainer.numNodes: every Worker, and the Launcher when it runs as a node), at least 1 (e.g. "8")`
	if diff := cmp.Diff(want, errs.ToAggregate().Error()); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestJSONForPolicyInput(t *testing.T) {
	c, _ := Parse(map[string]string{AnnotationMaxWorkers: "2", AnnotationAllowedNamespaces: "a"})
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"maxNodes":2,"allowedNamespaces":["a"]}`, string(b)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

func TestCheck(t *testing.T) {
	c := Constraints{
		MaxNodes:           ptrTo[int32](4),
		MaxGPUsPerWorker:   ptrTo[int64](2),
		RequiredNodeLabels: map[string]string{"pool": "gpu", "fast-net": ""},
		AllowedNamespaces:  []string{"ml-*"},
	}
	pinned := map[string]map[string]string{
		"launcher": {"pool": "gpu", "fast-net": "true"},
		"worker":   {"pool": "gpu", "fast-net": "true"},
	}
	cases := map[string]struct {
		job  Job
		want []string
	}{
		"within every limit": {
			job: Job{Namespace: "ml-a", RuntimeName: "rt", NumNodes: 4, GPUsPerWorker: 2, PodNodeLabels: pinned},
		},
		"everything violated": {
			job: Job{Namespace: "web", RuntimeName: "rt", NumNodes: 6, GPUsPerWorker: 8, PodNodeLabels: map[string]map[string]string{
				"launcher": {"pool": "cpu"}, "worker": {"pool": "gpu", "fast-net": "x"},
			}},
			want: []string{
				`spec.runtimeRef.name: Forbidden: runtime rt may only be used from namespaces ml-*, and this TrainJob is in "web"; use another runtime or ask a cluster admin to allow the namespace (mpiguard.io/allowed-namespaces)`,
				`spec.trainer.numNodes: Invalid value: 6: asks for 6 hostfile nodes (spec.trainer.numNodes) but runtime rt allows at most 4 per TrainJob (mpiguard.io/max-nodes); lower spec.trainer.numNodes to 4 or less`,
				`spec.trainer.resourcesPerNode: Invalid value: 8: gives each Worker 8 GPUs but runtime rt allows at most 2 per Worker (mpiguard.io/max-gpus-per-worker); request 2 or fewer GPUs per node and add Workers instead`,
				`spec.runtimePatches: Invalid value: "launcher": the Launcher pods are not pinned to nodes labelled fast-net, pool=gpu, which runtime rt requires (mpiguard.io/required-node-labels); add them to the pods' nodeSelector`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range c.Check(tc.job) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPolicyInput(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		want        map[string]any
	}{
		"unconstrained": {want: map[string]any{"errors": []any{}}},
		"all, plus a malformed one": {
			annotations: map[string]string{
				AnnotationMaxNodes:           "8",
				AnnotationMaxGPUsPerWorker:   "many",
				AnnotationRequiredNodeLabels: "pool=gpu",
				AnnotationAllowedNamespaces:  "ml-*",
			},
			want: map[string]any{
				"maxNodes":           int64(8),
				"maxWorkers":         int64(8),
				"requiredNodeLabels": map[string]any{"pool": "gpu"},
				"allowedNamespaces":  []any{"ml-*"},
				"errors":             []any{`metadata.annotations[mpiguard.io/max-gpus-per-worker]: Invalid value: "many": must be a whole number of GPUs, 0 or more (e.g. "4"; "0" forbids GPUs)`},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PolicyInput(tc.annotations)); diff != "" {
				t.Errorf("PolicyInput (-want +got):\n%s", diff)
			}
		})
	}
}

// mpiguard.io/max-workers, the former name of mpiguard.io/max-nodes, is read
// as it (the same count, spec.trainer.numNodes); both with different values
// is an error naming the one to remove.
func TestMaxWorkersIsTheFormerNameOfMaxNodes(t *testing.T) {
	c, errs := Parse(map[string]string{AnnotationMaxWorkers: "6"})
	if len(errs) != 0 || c.MaxNodes == nil || *c.MaxNodes != 6 {
		t.Errorf("max-workers alone: %+v, %v; want MaxNodes 6", c, errs)
	}
	c, errs = Parse(map[string]string{AnnotationMaxNodes: "6", AnnotationMaxWorkers: "6"})
	if len(errs) != 0 || *c.MaxNodes != 6 {
		t.Errorf("both, equal: %+v, %v", c, errs)
	}
	c, errs = Parse(map[string]string{AnnotationMaxNodes: "4", AnnotationMaxWorkers: "6"})
	if *c.MaxNodes != 4 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "is the former name of mpiguard.io/max-nodes, which says 4: remove mpiguard.io/max-workers") {
		t.Errorf("both, different: %+v, %v", c, errs)
	}
}
