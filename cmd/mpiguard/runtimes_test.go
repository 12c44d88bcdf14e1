package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app/scheme"
	"github.com/mpiguard/mpiguard/internal/check"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/webhooks/runtimetemplate"
)

const refusedRuntime = "testdata/refused-runtime.yaml"

// An admin validates a runtime template offline: check judges it as the
// runtime-template webhook would its create, alone or beside TrainJobs, and
// exits 1 for one the webhook would refuse.
func TestCheckJudgesRuntimeTemplates(t *testing.T) {
	for _, tc := range []struct {
		name     string
		files    []string
		wantExit int
		wantOut  []string
		notOut   []string
	}{
		{name: "refused runtime alone", files: []string{refusedRuntime}, wantExit: 1, wantOut: []string{
			`ClusterTrainingRuntime "openmpi-bad": DENIED`,
			`deny   runtime-template: spec.template.spec.replicatedJobs[1].template.spec.template.spec.containers: Invalid value: ["worker"]: the Worker job has no container named "node"`,
			`deny   runtime-template: spec.mlPolicy.numNodes: Invalid value: 2: is 2 but the launcher carries the trainer ancestor label`,
		}},
		{name: "refused runtime beside an allowed TrainJob", files: []string{refusedRuntime, samples + "max-duration/samples/allowed-default-deadline-set.yaml"}, wantExit: 1,
			wantOut: []string{`ClusterTrainingRuntime "openmpi-bad": DENIED`, "TrainJob team-a/resnet: ALLOWED"}},
		{name: "curated runtimes alone", files: []string{"../../runtimes/catalog/templates"},
			wantOut: []string{`ClusterTrainingRuntime "mpiguard-openmpi-v1": ALLOWED`}},
		{name: "accepted runtime beside TrainJobs is not listed", files: []string{samples + "max-duration/samples/allowed-default-deadline-set.yaml"},
			wantOut: []string{"TrainJob team-a/resnet: ALLOWED"}, notOut: []string{"ClusterTrainingRuntime"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, stderr bytes.Buffer
			err := runCheck(context.Background(), checkOptions{files: tc.files, output: "text"}, strings.NewReader(""), &out, &stderr)
			if got := exitOf(err); got != tc.wantExit {
				t.Errorf("exit = %d (%v), want %d\n%s", got, err, tc.wantExit, out.String())
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output does not contain %q:\n%s", want, out.String())
				}
			}
			for _, not := range tc.notOut {
				if strings.Contains(out.String(), not) {
					t.Errorf("output contains %q:\n%s", not, out.String())
				}
			}
		})
	}
}

// check's verdict on a runtime is the runtime-template webhook's: refused
// or not, the same message, the same warnings, for the refused runtime, the
// curated ones and every runtime of the policies' samples.
func TestRuntimeVerdictIsTheWebhooks(t *testing.T) {
	files, err := filepath.Glob(samples + "*/samples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, refusedRuntime, "../../runtimes/catalog/templates")
	validator := runtimetemplate.NewValidator(admission.NewDecoder(scheme.New()))
	compared, refused := 0, 0
	for _, file := range files {
		cluster := check.NewCluster()
		if err := cluster.ReadPath(file, nil); err != nil {
			t.Fatal(err)
		}
		results, err := check.ValidateRuntimes(cluster)
		if err != nil {
			t.Fatal(err)
		}
		byKey := map[string]check.Result{}
		for _, r := range results {
			byKey[r.Runtime] = r
		}
		var objs []client.Object
		for _, rt := range cluster.ClusterRuntimes {
			objs = append(objs, rt)
		}
		for _, rt := range cluster.Runtimes {
			objs = append(objs, rt)
		}
		// The apiserver defaults the object before the webhook sees it.
		if err := render.ApplyDefaults(objs...); err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs {
			raw, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			kind := obj.GetObjectKind().GroupVersionKind().Kind
			resp := validator.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Kind: kind}, Name: obj.GetName(), Namespace: obj.GetNamespace(),
				Object: runtime.RawExtension{Raw: raw},
			}})
			key := kind + ` "` + obj.GetName() + `"`
			if obj.GetNamespace() != "" {
				key = kind + ` "` + obj.GetNamespace() + "/" + obj.GetName() + `"`
			}
			got, ok := byKey[key]
			if !ok {
				t.Fatalf("%s: check has no result for %s (has %v)", file, key, results)
			}
			compared++
			message := ""
			if resp.Result != nil && !resp.Allowed {
				message = resp.Result.Message
				refused++
			}
			if diff := cmp.Diff(struct {
				Allowed bool
				Message string
			}{resp.Allowed, message}, struct {
				Allowed bool
				Message string
			}{got.Allowed, got.Refusal}); diff != "" {
				t.Errorf("%s: %s: check and the webhook differ (-webhook +check):\n%s", file, key, diff)
			}
			var warnings []string
			for _, v := range got.Violations {
				if v.Action == "warn" {
					warnings = append(warnings, v.Field+": "+v.Message)
				}
			}
			if diff := cmp.Diff(resp.Warnings, warnings); diff != "" {
				t.Errorf("%s: %s: warnings differ (-webhook +check):\n%s", file, key, diff)
			}
		}
	}
	if compared == 0 || refused == 0 {
		t.Fatalf("compared %d runtimes, %d refused: the test judged nothing a webhook refuses", compared, refused)
	}
}

// The mnist example in a namespace with an ordinary quota: one denial per
// quota, not one per resource and pod, and it leads with
// spec.trainer.resourcesPerNode, which reaches every pod on the curated
// runtime (its Launcher runs as a node); setting it there is enough.
func TestUndeclaredRequestsAreOneLineLeadingWithResourcesPerNode(t *testing.T) {
	data, err := os.ReadFile("testdata/mnist-ordinary-quota.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = runCheck(context.Background(), checkOptions{files: []string{"-"}, output: "text"}, bytes.NewReader(data), &out, io.Discard)
	if exitOf(err) != 1 {
		t.Fatalf("exit %d (%v), want 1\n%s", exitOf(err), err, out.String())
	}
	var denials []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "  deny") {
			denials = append(denials, line)
		}
	}
	if len(denials) != 1 || !strings.HasPrefix(denials[0], "  deny   aggregate-quota: spec.trainer.resourcesPerNode: ") ||
		!strings.Contains(denials[0], "set limits.cpu, limits.memory, requests.cpu, requests.memory in spec.trainer.resourcesPerNode") {
		t.Errorf("want one aggregate-quota denial leading with spec.trainer.resourcesPerNode, got:\n%s", out.String())
	}
	fixed := strings.Replace(string(data), "      limits: {nvidia.com/gpu: 2}", "      requests: {cpu: \"2\", memory: 4Gi}\n      limits: {cpu: \"2\", memory: 4Gi, nvidia.com/gpu: 2}", 1)
	out.Reset()
	if err := runCheck(context.Background(), checkOptions{files: []string{"-"}, output: "text"}, strings.NewReader(fixed), &out, io.Discard); err != nil {
		t.Errorf("with resourcesPerNode set: %v\n%s", err, out.String())
	}
}
