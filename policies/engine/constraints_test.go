package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mpiguard/mpiguard/runtimes/constraints"
)

// TestConstraintsInput checks that input.runtime.constraints is exactly
// constraints.PolicyInput of the runtime's annotations, as Rego sees it.
func TestConstraintsInput(t *testing.T) {
	cases := map[string]map[string]string{
		"no annotations":       nil,
		"unrelated annotation": {"team": "a"},
		"all four": {
			constraints.AnnotationMaxWorkers:         "8",
			constraints.AnnotationMaxGPUsPerWorker:   "0",
			constraints.AnnotationRequiredNodeLabels: "pool=gpu,nvidia.com/gpu.present",
			constraints.AnnotationAllowedNamespaces:  "team-a,ml-*",
		},
		"malformed": {
			constraints.AnnotationMaxWorkers:         "many",
			constraints.AnnotationRequiredNodeLabels: "bad key!=x",
		},
	}
	for name, annotations := range cases {
		t.Run(name, func(t *testing.T) {
			req := mpiRequest("team-a", 2)
			req.Runtime = RuntimeMeta{Kind: "ClusterTrainingRuntime", Name: "rt", Annotations: annotations}
			doc, err := ast.JSON(buildInput(req, ast.ObjectTerm()))
			if err != nil {
				t.Fatal(err)
			}
			got := doc.(map[string]any)["runtime"].(map[string]any)["constraints"]
			want, err := ast.JSON(ast.MustInterfaceToValue(constraints.PolicyInput(annotations)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("input.runtime.constraints (-want +got):\n%s", diff)
			}
		})
	}
}
