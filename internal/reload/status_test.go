package reload

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestPolicyChanged: the status annotation the leader writes (or any other
// metadata-only update) does not reload the policies, so replicas cannot
// trigger each other; data and label changes do.
func TestPolicyChanged(t *testing.T) {
	cm := policyConfigMap("max-nodes", KindRego, map[string]string{"max_nodes.rego": maxNodes})
	with := func(edit func(*corev1.ConfigMap)) *corev1.ConfigMap {
		c := cm.DeepCopy()
		edit(c)
		return c
	}
	p := policyChanged(ns)
	for _, tc := range []struct {
		name string
		new  *corev1.ConfigMap
		want bool
	}{
		{"status annotation", with(func(c *corev1.ConfigMap) { c.Annotations = map[string]string{AnnotationStatus: "loaded: policy set x"} }), false},
		{"resourceVersion only", with(func(c *corev1.ConfigMap) { c.ResourceVersion = "42" }), false},
		{"data", with(func(c *corev1.ConfigMap) { c.Data["max_nodes.rego"] += "\n" }), true},
		{"binaryData", with(func(c *corev1.ConfigMap) { c.BinaryData = map[string][]byte{"x": {1}} }), true},
		{"labels", with(func(c *corev1.ConfigMap) { c.Labels[LabelPolicy] = KindParameters }), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := p.Update(event.UpdateEvent{ObjectOld: cm, ObjectNew: tc.new})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Update (-want +got):\n%s", diff)
			}
		})
	}
	elsewhere := with(func(c *corev1.ConfigMap) { c.Namespace = "team-a" })
	if p.Create(event.CreateEvent{Object: elsewhere}) {
		t.Error("a labelled ConfigMap outside mpiguard's namespace reloads the policies")
	}
	if !p.Create(event.CreateEvent{Object: cm}) || !p.Delete(event.DeleteEvent{Object: cm}) {
		t.Error("creating or deleting a policy ConfigMap does not reload")
	}
}

// TestReadyAfterFirstLoad: readiness waits for the first load, and a rejected
// set counts as decided (the last good set serves).
func TestReadyAfterFirstLoad(t *testing.T) {
	broken := policyConfigMap("broken", KindRego, map[string]string{"broken.rego": "package mpiguard.policies.broken\n\ndeny contains msg if {\n\tmsg := nope(1)\n}\n"})
	r, c := newLoader(t, broken)
	if err := r.Ready(nil); err == nil {
		t.Fatal("ready before the policy ConfigMaps were loaded")
	}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Ready(nil); err != nil {
		t.Errorf("not ready after a load that rejected the set: %v", err)
	}
	// Not leading: the outcome is kept, nothing is written.
	if got := status(t, c, "broken"); got != "" {
		t.Errorf("status written without the reporter running: %q", got)
	}
}

// TestRejectionEventOncePerChange: reporting the same outcome again (a new
// leader taking over, a retry) writes no second PolicyRejected event.
func TestRejectionEventOncePerChange(t *testing.T) {
	broken := policyConfigMap("broken", KindRego, map[string]string{"broken.rego": "package mpiguard.policies.broken\n\ndeny contains msg if {\n\tmsg := nope(1)\n}\n"})
	r, _ := newLoader(t, broken)
	recorder := events.NewFakeRecorder(10)
	r.Status.Recorder = recorder
	load(t, r)
	// The successor's reporter starts with the same latest outcome.
	if _, err := r.Status.Reconcile(context.Background(), ctrl.Request{}); err != nil {
		t.Fatal(err)
	}
	close(recorder.Events)
	var got []string
	for e := range recorder.Events {
		got = append(got, strings.Fields(e)[0]+" "+strings.Fields(e)[1])
	}
	if diff := cmp.Diff([]string{"Warning PolicyRejected"}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
