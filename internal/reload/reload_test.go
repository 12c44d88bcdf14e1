package reload

import (
	"context"
	"errors"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/render"
)

const ns = "mpiguard-system"

// maxNodes is a policy a compliance team could push: at most 4 nodes.
const maxNodes = `package mpiguard.policies.max_nodes

deny contains {"field": "spec.trainer.numNodes", "msg": sprintf("%d nodes is more than 4", [input.job.numNodes])} if input.job.numNodes > 4
`

func policyConfigMap(name, kind string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{LabelPolicy: kind}},
		Data:       data,
	}
}

func request(t *testing.T, nodes int32) *engine.Request {
	t.Helper()
	doc, err := input.New(&input.Source{
		Operation: engine.Create,
		TrainJob: &trainer.TrainJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train"},
			Spec:       trainer.TrainJobSpec{ActiveDeadlineSeconds: 3600},
		},
		Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		View: &render.JobView{MPI: true, NumNodes: nodes, SlotsPerWorker: 1, ReplicatedJobs: []render.ReplicatedJobView{
			{Name: "node", Role: render.RoleWorker, Pods: nodes},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &engine.Request{Input: doc}
}

func allowed(t *testing.T, e *engine.Engine, nodes int32) bool {
	t.Helper()
	d, err := e.Decide(context.Background(), request(t, nodes))
	if err != nil {
		t.Fatal(err)
	}
	return d.Allowed
}

func status(t *testing.T, c client.Client, name string) string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Annotations[AnnotationStatus]
}

// newLoader is a loader over the embedded policies and a fake client holding
// objs, its reporter wired as SetupWithManager does.
func newLoader(t *testing.T, objs ...client.Object) (*Reconciler, client.Client) {
	t.Helper()
	base, err := engine.DefaultPolicySet()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(context.Background(), base, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).Build()
	return &Reconciler{Client: c, Engine: eng, Namespace: ns, Base: base, Status: &StatusReporter{Client: c, Recorder: events.NewFakeRecorder(100)}}, c
}

// load runs one load and, as on the leader, reports its outcome.
func load(t *testing.T, r *Reconciler) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), ctrl.Request{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Status.Reconcile(context.Background(), ctrl.Request{}); err != nil {
		t.Fatal(err)
	}
}

func TestReloadFromConfigMaps(t *testing.T) {
	ctx := context.Background()
	r, c := newLoader(t)
	eng := r.Engine
	defaultVersion := eng.Version()
	reconcile := func() {
		t.Helper()
		load(t, r)
	}
	if !allowed(t, eng, 8) {
		t.Fatal("the defaults deny an 8-node job")
	}

	// A broken policy is rejected with file:row and decisions do not change.
	broken := policyConfigMap("max-nodes", KindRego, map[string]string{"max_nodes.rego": "package mpiguard.policies.max_nodes\n\ndeny contains msg if {\n\tmsg := nope(1)\n}\n"})
	if err := c.Create(ctx, broken); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if got := status(t, c, "max-nodes"); !strings.HasPrefix(got, "rejected: ") || !strings.Contains(got, "max-nodes/max_nodes.rego:4:") {
		t.Errorf("status = %q, want rejected with max-nodes/max_nodes.rego:4", got)
	}
	if eng.Version() != defaultVersion || !allowed(t, eng, 8) {
		t.Errorf("a rejected policy changed decisions (version %s, was %s)", eng.Version(), defaultVersion)
	}

	// The fixed policy extends the set without a restart.
	edit := func(cm *corev1.ConfigMap, data map[string]string) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			t.Fatal(err)
		}
		cm.Data = data
		if err := c.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	edit(broken, map[string]string{"max_nodes.rego": maxNodes})
	reconcile()
	if got := status(t, c, "max-nodes"); got != "loaded: policy set "+eng.Version() {
		t.Errorf("status = %q, want loaded with version %s", got, eng.Version())
	}
	if allowed(t, eng, 8) || !allowed(t, eng, 4) {
		t.Error("the pushed policy is not enforced: want 8 nodes denied, 4 allowed")
	}

	// Parameters from a ConfigMap: the new policy only warns.
	params := policyConfigMap("params", KindParameters, map[string]string{ParametersKey: "policies:\n  max-nodes:\n    enforcement: warn\n"})
	if err := c.Create(ctx, params); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if !allowed(t, eng, 8) {
		t.Error("enforcement warn from the parameters ConfigMap is not applied")
	}

	// A bad parameters document is rejected; the last good set keeps serving.
	edit(params, map[string]string{ParametersKey: "policies:\n  max-nodes:\n    enforcement: maybe\n"})
	good := eng.Version()
	reconcile()
	if got := status(t, c, "params"); !strings.Contains(got, `enforcement "maybe" is not one of deny, warn, dryrun`) {
		t.Errorf("status = %q, want the parameters error", got)
	}
	if eng.Version() != good {
		t.Error("a rejected parameters document replaced the serving set")
	}

	// Deleting the ConfigMaps returns to the embedded defaults.
	for _, cm := range []*corev1.ConfigMap{broken, params} {
		if err := c.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	reconcile()
	if eng.Version() != defaultVersion {
		t.Errorf("version %s after deleting the ConfigMaps, want the defaults' %s", eng.Version(), defaultVersion)
	}
}

// A ConfigMap policy calling a builtin the engine's sandbox refuses (here
// http.send, which could reach the cloud metadata endpoint with any TrainJob's
// env) is rejected like any compile error: the status annotation names the
// builtin at file:row, and the last good set keeps serving.
func TestReloadRejectsSandboxedBuiltin(t *testing.T) {
	exfiltrate := policyConfigMap("exfiltrate", KindRego, map[string]string{"exfiltrate.rego": `package mpiguard.policies.exfiltrate

deny contains "never" if {
	http.send({"method": "POST", "url": "http://169.254.169.254/", "body": input.trainJob.env}).status_code < 0
}
`})
	r, c := newLoader(t, exfiltrate)
	eng := r.Engine
	serving := eng.Version()
	load(t, r)
	want := "rejected: policy compile error: exfiltrate/exfiltrate.rego:4: builtin http.send is not allowed by mpiguard's policy sandbox: it makes network requests from mpiguard's pod; still serving policy set " + serving
	if got := status(t, c, "exfiltrate"); got != want {
		t.Errorf("status = %q\nwant       %q", got, want)
	}
	if eng.Version() != serving || !allowed(t, eng, 8) {
		t.Errorf("a rejected policy changed decisions (version %s, was %s)", eng.Version(), serving)
	}
	if !errors.As(eng.LastError(), new(*engine.CompileError)) {
		t.Errorf("LastError = %v, want the *CompileError", eng.LastError())
	}
}

// A policy added from a ConfigMap brings its parameter schema under the key
// <policy>.parameters.schema.yaml: its defaults reach the policy, parameters
// from a parameters ConfigMap are checked against it, and a misspelled one is
// rejected with its path while the last good set keeps serving.
func TestReloadParameterSchema(t *testing.T) {
	ctx := context.Background()
	policy := policyConfigMap("max-nodes", KindRego, map[string]string{
		"max_nodes.rego": `package mpiguard.policies.max_nodes

deny contains {"field": "spec.trainer.numNodes", "msg": "too many nodes"} if input.job.numNodes > input.parameters["max-nodes"].limit
`,
		"max-nodes" + SchemaKeySuffix: "type: object\nproperties:\n  limit: {type: integer, default: 4}\n",
	})
	r, c := newLoader(t, policy)
	eng := r.Engine
	load(t, r)
	if got := status(t, c, "max-nodes"); got != "loaded: policy set "+eng.Version() {
		t.Fatalf("status = %q, want loaded", got)
	}
	if allowed(t, eng, 5) || !allowed(t, eng, 4) {
		t.Error("the schema's default limit 4 is not applied: want 5 nodes denied, 4 allowed")
	}

	params := policyConfigMap("params", KindParameters, map[string]string{ParametersKey: "policies:\n  max-nodes:\n    parameters: {limit: 6}\n"})
	if err := c.Create(ctx, params); err != nil {
		t.Fatal(err)
	}
	load(t, r)
	if !allowed(t, eng, 6) || allowed(t, eng, 7) {
		t.Error("limit 6 from the parameters ConfigMap is not applied")
	}
	good := eng.Version()

	if err := c.Get(ctx, client.ObjectKeyFromObject(params), params); err != nil {
		t.Fatal(err)
	}
	params.Data = map[string]string{ParametersKey: "policies:\n  max-nodes:\n    parameters: {limt: 8}\n"}
	if err := c.Update(ctx, params); err != nil {
		t.Fatal(err)
	}
	load(t, r)
	if got := status(t, c, "params"); !strings.Contains(got, "policies.max-nodes.parameters.limt: unknown field") {
		t.Errorf("status = %q, want the misspelled parameter named", got)
	}
	if eng.Version() != good || !allowed(t, eng, 6) {
		t.Errorf("a rejected parameters document replaced the serving set (version %s, want %s)", eng.Version(), good)
	}
}
