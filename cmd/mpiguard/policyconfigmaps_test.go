//go:build !checkonly

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/internal/check"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/reload"
	"github.com/mpiguard/mpiguard/internal/render"
)

// The ConfigMaps policy configmaps prints are what mpiguard's policy reload
// loads: given to the reloader, the engine serves the folder's policy, with
// its schema and parameters, and denies its denied sample as check
// --policies does.
func TestPolicyConfigMapsLoadAsTheFolder(t *testing.T) {
	var out bytes.Buffer
	if err := runPolicyConfigMaps(examplePolicies, "mpiguard-system", &out); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, doc := range strings.Split(out.String(), "\n---\n") {
		cm := &corev1.ConfigMap{}
		if err := yaml.UnmarshalStrict([]byte(doc), cm); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if _, ok := cm.Labels[reload.LabelPolicy]; !ok || cm.Namespace != "mpiguard-system" {
			t.Errorf("ConfigMap %s: labels %v, namespace %q", cm.Name, cm.Labels, cm.Namespace)
		}
		for key := range cm.Data {
			if strings.HasSuffix(key, "_test.rego") {
				t.Errorf("ConfigMap %s carries the test %s", cm.Name, key)
			}
		}
		objs = append(objs, cm)
	}

	base, err := engine.DefaultPolicySet()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, err := engine.New(ctx, base, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).Build()
	r := &reload.Reconciler{Client: c, Engine: eng, Namespace: "mpiguard-system", Base: base, Status: &reload.StatusReporter{Client: c, Recorder: events.NewFakeRecorder(100)}}
	if _, err := r.Reconcile(ctx, ctrl.Request{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(eng.Policies(), "max-nodes") {
		t.Fatalf("the reloaded engine serves %v, not max-nodes", eng.Policies())
	}
	rnd, err := render.NewRenderer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cluster := check.NewCluster()
	if err := cluster.ReadFile(filepath.Join(examplePolicies, "max-nodes/samples/denied-too-many-nodes.yaml")); err != nil {
		t.Fatal(err)
	}
	results, err := (&check.Evaluator{Engine: eng, Renderer: rnd}).Evaluate(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := check.WriteText(&text, results, true); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(examplePolicies, "max-nodes/samples/denied-too-many-nodes.want"))
	if err != nil {
		t.Fatal(err)
	}
	if text.String() != string(want) {
		t.Errorf("the reloaded policies judge the sample otherwise than its .want:\n%s\nwant:\n%s", text.String(), want)
	}
}

// policy test --update writes the missing or stale .want files of a folder
// given by any path (here absolute, from another working directory), prints
// the paths as given, and leaves a sample that fails otherwise failing.
func TestPolicyTestUpdateFromAnyDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my-policies")
	if err := os.CopyFS(dir, os.DirFS(examplePolicies)); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "max-nodes/samples/denied-too-many-nodes.want")
	stale := filepath.Join(dir, "max-nodes/samples/allowed-at-most-16-nodes.want")
	good, err := os.ReadFile(missing)
	if err != nil {
		t.Fatal(err)
	}
	goodStale, err := os.ReadFile(stale)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(missing); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("TrainJob team-a/resnet: DENIED\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // typed from elsewhere

	var out bytes.Buffer
	err = runPolicyTestWith(context.Background(), dir, policyTestOptions{}, &out)
	if exitOf(err) != 1 {
		t.Fatalf("without --update: exit %d (%v), want 1\n%s", exitOf(err), err, out.String())
	}
	for _, want := range []string{
		"FAIL sample " + filepath.Join(dir, "max-nodes/samples/denied-too-many-nodes.yaml"),
		"no expected output denied-too-many-nodes.want\n",
		"to write the .want files from this output (then review them): mpiguard policy test --update " + dir + "\n",
		"output differs from allowed-at-most-16-nodes.want, line by line",
		`"TrainJob team-a/resnet: DENIED",`, // a whole line of the .want, not a cut-off byte diff
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not contain %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := runPolicyTestWith(context.Background(), dir, policyTestOptions{update: true}, &out); err != nil {
		t.Fatalf("--update: %v\n%s", err, out.String())
	}
	for _, f := range []struct {
		path string
		want []byte
	}{{missing, good}, {stale, goodStale}} {
		got, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.want) {
			t.Errorf("%s after --update:\n%s\nwant:\n%s", f.path, got, f.want)
		}
		if !strings.Contains(out.String(), "UPDATED "+f.path) {
			t.Errorf("--update does not name %s:\n%s", f.path, out.String())
		}
	}
	if err := runPolicyTestWith(context.Background(), dir, policyTestOptions{}, &out); err != nil {
		t.Errorf("after --update the folder still fails: %v\n%s", err, out.String())
	}

	if err := runPolicyTestWith(context.Background(), "", policyTestOptions{update: true}, &out); exitOf(err) != 2 {
		t.Errorf("--update of the embedded policies: exit %d (%v), want 2", exitOf(err), err)
	}

	// One policy's folder given for the tree: refused with the command to type.
	err = runPolicyTestWith(context.Background(), filepath.Join(dir, "max-nodes"), policyTestOptions{update: true}, &out)
	if exitOf(err) != 2 || !strings.Contains(fmt.Sprint(err), "mpiguard policy test "+dir) {
		t.Errorf("a policy's own folder: exit %d (%v), want 2 and the command with %s", exitOf(err), err, dir)
	}
}
