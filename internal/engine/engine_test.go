package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/policies"
)

// demoPolicy denies more than maxNodes nodes, warns about one node, and labels pods.
func demoPolicy(maxNodes int) string {
	return `package mpiguard.policies.node_limit

deny contains {"field": "spec.trainer.numNodes", "msg": sprintf("%d nodes is more than ` + itoa(maxNodes) + `", [input.job.numNodes])} if {
	input.job.numNodes > ` + itoa(maxNodes) + `
}

warn contains {"field": "spec.trainer.numNodes", "msg": "a single node needs no MPI"} if input.job.numNodes == 1

mutate contains {"target": "podTemplate", "replicatedJob": rj.name, "field": "metadata.labels", "key": "demo", "value": "yes"} if {
	some rj in input.job.replicatedJobs
}
`
}

func itoa(n int) string { return strconv.Itoa(n) }

// value reads a counter or gauge.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}

// series counts the series of a metric family in a registry.
func series(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return len(f.Metric)
		}
	}
	return 0
}

func demoSet(maxNodes int, settings PolicySettings) PolicySet {
	return PolicySet{
		Modules:    map[string]string{"node-limit/node_limit.rego": demoPolicy(maxNodes)},
		Parameters: Parameters{Policies: map[string]PolicySettings{"node-limit": settings}},
	}
}

// mpiRequest is what the input document of a CREATE of an MPI job of nodes
// Workers in namespace ns is built from (request builds it).
func mpiRequest(ns string, nodes int32) *input.Source {
	return &input.Source{
		Operation: Create,
		User:      "alice",
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

// request is the engine's request for src, its input document built as the
// pipeline builds it. A source input.New refuses is a test built wrong: it
// panics, as it may run in a goroutine.
func request(src *input.Source) *Request {
	doc, err := input.New(src)
	if err != nil {
		panic(err)
	}
	return &Request{Input: doc}
}

func decide(t *testing.T, e *Engine, req *input.Source) *Decision {
	t.Helper()
	d, err := e.Decide(context.Background(), request(req))
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	return d
}

func TestEnforcementAndExemptions(t *testing.T) {
	denyMsg := Violation{Policy: "node-limit", Field: "spec.trainer.numNodes", Message: "4 nodes is more than 2"}
	labels := []Change{
		{Policy: "node-limit", Target: "podTemplate", ReplicatedJob: "launcher", Field: "metadata.labels", Key: "demo", Value: "yes"},
		{Policy: "node-limit", Target: "podTemplate", ReplicatedJob: "node", Field: "metadata.labels", Key: "demo", Value: "yes"},
	}
	with := func(v Violation, a Enforcement) Violation { v.Action = a; return v }
	cases := []struct {
		name       string
		settings   PolicySettings
		ns         string
		nodes      int32
		wantAllow  bool
		wantViols  []Violation
		wantChange []Change
		wantDryRun []Change
	}{
		{name: "deny", nodes: 4, ns: "a", wantViols: []Violation{with(denyMsg, EnforceDeny)}, wantChange: labels},
		{name: "within limit", nodes: 2, ns: "a", wantAllow: true, wantChange: labels},
		{name: "warn rule only warns under deny", nodes: 1, ns: "a", wantAllow: true,
			wantViols:  []Violation{{Policy: "node-limit", Action: EnforceWarn, Field: "spec.trainer.numNodes", Message: "a single node needs no MPI"}},
			wantChange: labels},
		{name: "warn enforcement", settings: PolicySettings{Enforcement: EnforceWarn}, nodes: 4, ns: "a", wantAllow: true,
			wantViols: []Violation{with(denyMsg, EnforceWarn)}, wantChange: labels},
		{name: "dryrun logs only", settings: PolicySettings{Enforcement: EnforceDryRun}, nodes: 4, ns: "a", wantAllow: true,
			wantViols: []Violation{with(denyMsg, EnforceDryRun)}, wantDryRun: labels},
		{name: "exempt namespace", settings: PolicySettings{ExemptNamespaces: []string{"sandbox-*"}}, nodes: 4, ns: "sandbox-1", wantAllow: true},
		{name: "exemption prefix does not match", settings: PolicySettings{ExemptNamespaces: []string{"sandbox-*"}}, nodes: 4, ns: "prod",
			wantViols: []Violation{with(denyMsg, EnforceDeny)}, wantChange: labels},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(context.Background(), demoSet(2, tc.settings), Options{})
			if err != nil {
				t.Fatal(err)
			}
			d := decide(t, e, mpiRequest(tc.ns, tc.nodes))
			m, err := e.Mutations(context.Background(), request(mpiRequest(tc.ns, tc.nodes)))
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.wantAllow {
				t.Errorf("Allowed = %v, want %v", d.Allowed, tc.wantAllow)
			}
			if diff := cmp.Diff(tc.wantViols, d.Violations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantChange, m.Changes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("mutations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDryRun, d.DryRunMutations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("dry-run mutations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHotReloadKeepsLastGoodSet(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	e, err := New(ctx, demoSet(2, PolicySettings{}), Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	v1 := e.Version()
	if d := decide(t, e, mpiRequest("a", 4)); d.Allowed {
		t.Fatal("4 nodes allowed under a limit of 2")
	}

	broken := PolicySet{Modules: map[string]string{"node-limit/node_limit.rego": "package mpiguard.policies.node_limit\n\ndeny contains msg if {\n\tmsg := undefined_function(1)\n}\n"}}
	err = e.Load(ctx, broken)
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("Load(broken) = %v, want a *CompileError", err)
	}
	if !strings.Contains(err.Error(), "node-limit/node_limit.rego:4:") {
		t.Errorf("compile error %q does not name file:row node-limit/node_limit.rego:4", err)
	}
	if diff := cmp.Diff(err.Error(), e.LastError().Error()); diff != "" {
		t.Errorf("LastError differs: %s", diff)
	}
	if e.Version() != v1 {
		t.Errorf("version changed to %s after a failed load", e.Version())
	}
	if d := decide(t, e, mpiRequest("a", 4)); d.Allowed || d.PolicySetVersion != v1 {
		t.Errorf("after a failed load: allowed=%v version=%s, want the last good set (denied, %s)", d.Allowed, d.PolicySetVersion, v1)
	}

	if err := e.Load(ctx, demoSet(5, PolicySettings{})); err != nil {
		t.Fatal(err)
	}
	if e.LastError() != nil {
		t.Errorf("LastError = %v after a good load", e.LastError())
	}
	if d := decide(t, e, mpiRequest("a", 4)); !d.Allowed || d.PolicySetVersion == v1 {
		t.Errorf("after the fix: allowed=%v version=%s, want allowed with a new version", d.Allowed, d.PolicySetVersion)
	}
	if got := value(t, e.metrics.reloads.WithLabelValues("failure")); got != 1 {
		t.Errorf("reload failures = %v, want 1", got)
	}
	if got := value(t, e.metrics.reloads.WithLabelValues("success")); got != 2 {
		t.Errorf("reload successes = %v, want 2", got)
	}
	if got := value(t, e.metrics.setInfo.WithLabelValues(e.Version())); got != 1 {
		t.Errorf("policy set info for %s = %v, want 1", e.Version(), got)
	}
	if n := series(t, reg, "mpiguard_policy_set_info"); n != 1 {
		t.Errorf("policy set info series = %d, want exactly 1", n)
	}
}

func TestLoadRejects(t *testing.T) {
	cases := map[string]PolicySet{
		"parse error":          {Modules: map[string]string{"x.rego": "package mpiguard.policies.x\n\ndeny contains if {"}},
		"no policy package":    {Modules: map[string]string{"x.rego": "package other\n\nallow := true\n"}},
		"unknown policy param": {Modules: map[string]string{"node-limit/n.rego": demoPolicy(2)}, Parameters: Parameters{Policies: map[string]PolicySettings{"typo": {}}}},
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := New(context.Background(), set, Options{}); err == nil {
				t.Error("New accepted a bad policy set")
			}
		})
	}
}

func TestNonMPIJobIsNotEvaluated(t *testing.T) {
	var log bytes.Buffer
	e, err := New(context.Background(), demoSet(2, PolicySettings{}), Options{DecisionLog: &log})
	if err != nil {
		t.Fatal(err)
	}
	req := mpiRequest("a", 9)
	req.View.MPI = false
	d := decide(t, e, req)
	if !d.Allowed || d.Governed || len(d.Violations) > 0 || !d.Mutation.Empty() {
		t.Errorf("non-MPI decision = %+v, want allowed, not governed, untouched", d)
	}
	if log.Len() != 0 {
		t.Errorf("non-MPI decision logged: %s", log.String())
	}
}

func TestBadRequestsAreErrors(t *testing.T) {
	e, err := New(context.Background(), demoSet(2, PolicySettings{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	noView := mpiRequest("a", 1)
	noView.View = nil
	updateWithoutOld := mpiRequest("a", 1)
	updateWithoutOld.Operation = Update
	for name, src := range map[string]*input.Source{"nil": nil, "no view": noView, "update without old": updateWithoutOld} {
		if _, err := input.New(src); err == nil {
			t.Errorf("%s: input.New returned no error", name)
		}
	}
	for name, req := range map[string]*Request{"nil": nil, "no input": {}} {
		if _, err := e.Decide(context.Background(), req); err == nil {
			t.Errorf("%s: Decide returned no error", name)
		}
	}
}

func TestMalformedPolicyResultsAreErrors(t *testing.T) {
	cases := map[string]string{
		"violation without msg":         "package mpiguard.policies.bad\n\ndeny contains {\"field\": \"spec\"} if true\n",
		"mutation of a forbidden field": "package mpiguard.policies.bad\n\nmutate contains {\"target\": \"trainJob\", \"field\": \"spec.trainer.numNodes\", \"value\": 1} if true\n",
		"conflicting mutations":         "package mpiguard.policies.bad\n\nmutate contains {\"target\": \"podTemplate\", \"replicatedJob\": \"node\", \"field\": \"metadata.labels\", \"key\": \"k\", \"value\": v} if some v in [\"a\", \"b\"]\n",
		"deny not a set":                "package mpiguard.policies.bad\n\ndeny := \"no\"\n",
		"undefined deny":                "package mpiguard.policies.bad\n\ndeny := {\"x\"} if false\n",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			e, err := New(context.Background(), PolicySet{Modules: map[string]string{"bad.rego": src}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d, err := e.Decide(context.Background(), request(mpiRequest("a", 1))); err == nil && !strings.Contains(name, "mutation") {
				t.Errorf("Decide = %+v, want an error (never a silent allow)", d)
			}
			if m, err := e.Mutations(context.Background(), request(mpiRequest("a", 1))); err == nil && strings.Contains(name, "mutation") {
				t.Errorf("Mutations = %+v, want an error (never a half-applied mutation)", m)
			}
		})
	}
}

func TestDecisionLogLine(t *testing.T) {
	var log bytes.Buffer
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e, err := New(context.Background(), demoSet(2, PolicySettings{}), Options{DecisionLog: &log, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	decide(t, e, mpiRequest("team-a", 4))
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("decision log has %d lines, want 1:\n%s", len(lines), log.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["latencySeconds"].(float64); !ok {
		t.Errorf("latencySeconds missing: %v", got)
	}
	delete(got, "latencySeconds")
	delete(got, "mutations")
	want := map[string]any{
		"time": "2026-01-02T03:04:05Z", "user": "alice", "kind": "TrainJob", "namespace": "team-a", "trainJob": "train",
		"operation": "CREATE", "policySetVersion": e.Version(), "allowed": false,
		"violations": []any{map[string]any{"policy": "node-limit", "action": "deny", "field": "spec.trainer.numNodes", "message": "4 nodes is more than 2"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decision log line (-want +got):\n%s", diff)
	}
}

func TestMutationApplyIsIdempotent(t *testing.T) {
	e, err := New(context.Background(), demoSet(2, PolicySettings{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	mutation, err := e.Mutations(context.Background(), request(mpiRequest("a", 2)))
	if err != nil {
		t.Fatal(err)
	}
	d := &Decision{Mutation: *mutation}
	kueue := trainer.RuntimePatch{Manager: "kueue.x-k8s.io/manager"}
	tj := &trainer.TrainJob{Spec: trainer.TrainJobSpec{RuntimePatches: []trainer.RuntimePatch{kueue}}}
	if !d.Mutation.Apply(tj) {
		t.Fatal("first Apply changed nothing")
	}
	once := tj.DeepCopy()
	if d.Mutation.Apply(tj) {
		t.Error("second Apply changed the TrainJob")
	}
	if diff := cmp.Diff(once, tj); diff != "" {
		t.Errorf("second Apply (-once +twice):\n%s", diff)
	}
	want := []trainer.RuntimePatch{kueue, {
		Manager: AdmissionManager,
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{
			ReplicatedJobs: []trainer.ReplicatedJobPatch{
				{Name: "launcher", Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"demo": "yes"}}}}}},
				{Name: "node", Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"demo": "yes"}}}}}},
			},
		}}},
	}}
	if diff := cmp.Diff(want, tj.Spec.RuntimePatches); diff != "" {
		t.Errorf("runtime patches (-want +got):\n%s", diff)
	}

	// A changed entry is replaced as a whole; the deadline is only set when absent.
	tj.Spec.RuntimePatches[1].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs[0].Name = "stale"
	tj.Spec.ActiveDeadlineSeconds = 60
	m := d.Mutation
	m.ActiveDeadlineSeconds = ptr.To[int64](3600)
	if !m.Apply(tj) {
		t.Error("Apply did not repair a changed entry")
	}
	if diff := cmp.Diff(want, tj.Spec.RuntimePatches); diff != "" {
		t.Errorf("repaired runtime patches (-want +got):\n%s", diff)
	}
	if tj.Spec.ActiveDeadlineSeconds != 60 {
		t.Errorf("activeDeadlineSeconds = %d, want the user's 60 kept", tj.Spec.ActiveDeadlineSeconds)
	}
}

func TestTwoEnginesShareARegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	for range 2 {
		if _, err := New(context.Background(), demoSet(2, PolicySettings{}), Options{Registerer: reg}); err != nil {
			t.Fatalf("second engine on the same registry: %v", err)
		}
	}
	var out *dto.Metric
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "mpiguard_policy_reloads_total" {
			out = f.Metric[0]
		}
	}
	if got := out.GetCounter().GetValue(); got != 2 {
		t.Errorf("reloads counted on the shared registry = %v, want 2", got)
	}
}

// The rendered-pods policy denies rendered pods the apiserver would reject
// (input.job.problems), with the render package's detail, under its
// enforcement; the mutating pass ignores them.
func TestRenderedPodProblemsDeny(t *testing.T) {
	src, err := policies.FS.ReadFile(RenderPolicy + "/rendered_pods.rego")
	if err != nil {
		t.Fatal(err)
	}
	renderedPods := string(src)
	problem := field.Invalid(field.NewPath("spec", "replicatedJobs").Key("node"), "32Gi", "must be less than or equal to memory limit of 1Gi")
	for _, tc := range []struct {
		settings PolicySettings
		want     Violation
		allowed  bool
	}{
		{PolicySettings{}, Violation{Policy: RenderPolicy, Action: EnforceDeny, Field: "spec.replicatedJobs[node]",
			Message: `the Trainer would create pods the apiserver rejects: Invalid value: "32Gi": must be less than or equal to memory limit of 1Gi`}, false},
		{PolicySettings{Enforcement: EnforceWarn}, Violation{Policy: RenderPolicy, Action: EnforceWarn, Field: "spec.replicatedJobs[node]",
			Message: `the Trainer would create pods the apiserver rejects: Invalid value: "32Gi": must be less than or equal to memory limit of 1Gi`}, true},
	} {
		set := demoSet(9, PolicySettings{})
		set.Modules[RenderPolicy+"/rendered_pods.rego"] = renderedPods
		set.Parameters.Policies[RenderPolicy] = tc.settings
		e, err := New(context.Background(), set, Options{})
		if err != nil {
			t.Fatal(err)
		}
		req := mpiRequest("a", 2)
		req.View.Problems = field.ErrorList{problem}
		d := decide(t, e, req)
		if diff := cmp.Diff([]Violation{tc.want}, d.Violations); diff != "" || d.Allowed != tc.allowed {
			t.Errorf("enforcement %q: allowed %v (want %v), violations (-want +got):\n%s", tc.settings.Enforcement, d.Allowed, tc.allowed, diff)
		}
		m, err := e.Mutations(context.Background(), request(req))
		if err != nil || len(m.Changes) != 2 {
			t.Errorf("the mutating pass must not fail on render problems: %v %+v", err, m)
		}
	}
}

// TestDecisionLogLinesNeverInterleave: concurrent decisions write whole
// lines, one per decision.
func TestDecisionLogLinesNeverInterleave(t *testing.T) {
	var log bytes.Buffer
	e, err := New(context.Background(), demoSet(2, PolicySettings{}), Options{DecisionLog: &log})
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 16, 25
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if _, err := e.Decide(context.Background(), request(mpiRequest(fmt.Sprintf("ns-%d-%d", g, i), int32(1+i%4)))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != goroutines*each {
		t.Fatalf("decision log has %d lines, want %d", len(lines), goroutines*each)
	}
	seen := map[string]bool{}
	for i, line := range lines {
		var entry struct {
			Namespace string `json:"namespace"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("line %d is not one JSON entry: %v\n%s", i+1, err, line)
		}
		seen[entry.Namespace] = true
	}
	if len(seen) != goroutines*each {
		t.Errorf("%d distinct decisions logged, want %d", len(seen), goroutines*each)
	}
}
