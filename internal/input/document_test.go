package input

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/runtimes/constraints"
)

// TestInputDocument pins the parts of the documented input schema that
// policies rely on (docs/policies.md).
func TestInputDocument(t *testing.T) {
	req := mpiSource("team-a", 2)
	req.User, req.Groups = "alice", []string{"ml"}
	req.TrainJob.Labels = map[string]string{"team": "a"}
	req.TrainJob.Spec.Suspend = ptr.To(true)
	req.TrainJob.Spec.Trainer = &trainer.Trainer{
		NumNodes: ptr.To[int32](2),
		Image:    ptr.To("registry.example.com/train:v1"),
		Env:      []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}},
	}
	// Workers that run the runtime's image, as root: a namespace warning
	// about "baseline" sees nothing, one enforcing "restricted" the
	// missing runAsNonRoot.
	req.View.ReplicatedJobs[1].PodTemplate.Spec.Containers = []corev1.Container{{Name: "node", Image: "mpioperator/openmpi",
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}
	req.View.ReplicatedJobs[1].PodTemplate.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	req.Namespace.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "baseline"}
	req.TrainJob.Spec.RuntimePatches = []trainer.RuntimePatch{{
		Manager: "example.com/tool",
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{
			ReplicatedJobs: []trainer.ReplicatedJobPatch{{Name: "launcher", Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{
				Template: &trainer.PodTemplatePatch{Spec: &trainer.PodSpecPatch{Containers: []trainer.ContainerPatch{{
					Name: "launcher", Env: []corev1.EnvVar{{Name: "OMPI_MCA_plm_rsh_args", Value: "-p 2222"}},
				}}}},
			}}}},
		}}},
	}}
	req.View.ReplicatedJobs[1].PerPod = renderCharge("1500m")
	req.View.Launcher, req.View.Workers = &req.View.ReplicatedJobs[0], &req.View.ReplicatedJobs[1]
	req.Runtime = RuntimeMeta{Kind: "ClusterTrainingRuntime", Name: "openmpi", Labels: map[string]string{"tier": "gold"}}
	// The engine gives the policy set's parameters (checked and defaulted
	// against each schema); the document carries them as given.
	in := inputDoc(t, req, map[string]any{"slots-gpus": map[string]any{"mode": "equal"}})
	get := func(path ...string) any {
		var v any = in
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		return v
	}
	checks := []struct {
		path []string
		want any
	}{
		{[]string{"request", "operation"}, "CREATE"},
		{[]string{"request", "user"}, map[string]any{"username": "alice", "groups": []any{"ml"}}},
		{[]string{"trainJob", "labels"}, map[string]any{"team": "a"}},
		{[]string{"trainJob", "suspend"}, true},
		{[]string{"trainJob", "activeDeadlineSeconds"}, jsonNumber(0)},
		{[]string{"trainJob", "numNodes"}, jsonNumber(2)},
		{[]string{"trainJob", "env"}, []any{
			map[string]any{"field": "spec.trainer.env[0]", "name": "NCCL_DEBUG", "value": "INFO"},
			map[string]any{"field": "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].env[0]", "name": "OMPI_MCA_plm_rsh_args", "value": "-p 2222"},
		}},
		{[]string{"trainJob", "runtimePatchManagers"}, []any{"example.com/tool"}},
		{[]string{"job", "workers", "perPod", "requests", "cpu"}, map[string]any{"value": mustJSON(t, "1.5"), "milli": jsonNumber(1500), "display": "1500m"}},
		{[]string{"job", "workers", "nodeSelector"}, map[string]any{}},
		{[]string{"job", "workers", "requiredNodeSelectorTerms"}, []any{}},
		{[]string{"job", "launcher", "name"}, "launcher"},
		{[]string{"trainJob", "image"}, "registry.example.com/train:v1"},
		{[]string{"job", "workers", "images"}, map[string]any{"node": "mpioperator/openmpi"}},
		{[]string{"job", "launcher", "images"}, map[string]any{}},
		{[]string{"job", "podSecurity", "enforce"}, map[string]any{"level": "restricted", "version": "latest", "policy": "restricted:latest", "violations": []any{
			map[string]any{
				"replicatedJob": "node", "role": "worker", "field": "spec.replicatedJobs[node].template.spec.template.spec",
				"reason": "runAsNonRoot != true", "detail": `pod or container "node" must set securityContext.runAsNonRoot=true`,
				"fix": "set securityContext.runAsNonRoot: true on the pod, with a non-zero runAsUser or an image whose USER is a non-zero UID",
			},
		}}},
		{[]string{"job", "podSecurity", "warn"}, map[string]any{"level": "baseline", "version": "latest", "policy": "baseline:latest", "violations": []any{}}},
		{[]string{"job", "podSecurity", "audit", "level"}, "privileged"},
		{[]string{"job", "podSecurity", "errors"}, []any{}},
		{[]string{"namespace", "name"}, "team-a"},
		{[]string{"runtime"}, map[string]any{"kind": "ClusterTrainingRuntime", "name": "openmpi", "labels": map[string]any{"tier": "gold"}, "annotations": map[string]any{}, "constraints": map[string]any{"errors": []any{}}}},
		{[]string{"parameters", "slots-gpus", "mode"}, "equal"},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, get(c.path...)); diff != "" {
			t.Errorf("input.%v (-want +got):\n%s", c.path, diff)
		}
	}
	if _, ok := in["oldTrainJob"]; ok {
		t.Error("oldTrainJob present on CREATE")
	}
}

// mpiSource is what the input document of a CREATE of an MPI job of nodes
// Workers in namespace ns is built from.
func mpiSource(ns string, nodes int32) *Source {
	return &Source{
		Operation: Create,
		TrainJob:  &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "train"}},
		Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		View: &render.JobView{
			MPI: true, NumNodes: nodes, SlotsPerWorker: 1,
			ReplicatedJobs: []render.ReplicatedJobView{
				{Name: "launcher", Role: render.RoleLauncher, Pods: 1},
				{Name: "node", Role: render.RoleWorker, Pods: nodes},
			},
		},
	}
}

// inputDoc is the input document of src as policies see it: built and made
// an OPA value as the engine has it, with params as input.parameters, then
// read back as JSON.
func inputDoc(t *testing.T, src *Source, params map[string]any) map[string]any {
	t.Helper()
	d, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ast.JSON(d.Value(ast.NewTerm(ast.MustInterfaceToValue(params)), nil))
	if err != nil {
		t.Fatal(err)
	}
	return doc.(map[string]any)
}

func renderCharge(cpu string) (c render.Charge) {
	c.Pods = 1
	c.Requests = corev1.ResourceList{"cpu": resource.MustParse(cpu)}
	return c
}

func mustJSON(t *testing.T, number string) any {
	t.Helper()
	v, err := ast.JSON(ast.MustParseTerm(number).Value)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

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
			req := mpiSource("team-a", 2)
			req.Runtime = RuntimeMeta{Kind: "ClusterTrainingRuntime", Name: "rt", Annotations: annotations}
			got := inputDoc(t, req, nil)["runtime"].(map[string]any)["constraints"]
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
