package render

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestTemplateCacheFollowsRuntimeVersions: a cached template belongs to one
// version of one runtime. A new resourceVersion (the runtime was edited) or a
// new UID (deleted and created again) renders from the new template.
func TestTemplateCacheFollowsRuntimeVersions(t *testing.T) {
	r := renderer(t)
	rt := mpiRuntime()
	tj := trainJob(numNodes(2))
	if err := ApplyDefaults(rt, tj); err != nil {
		t.Fatal(err)
	}
	rt.SetUID(types.UID("uid-1"))
	rt.SetResourceVersion("1")
	image := func() string {
		t.Helper()
		view, err := r.Render(context.Background(), Input{TrainJob: tj, Runtime: rt})
		if err != nil {
			t.Fatal(err)
		}
		return view.Workers.PodTemplate.Spec.Containers[0].Image
	}
	first := image()

	node := replicatedJob(&rt.Spec, "node")
	node.Template.Spec.Template.Spec.Containers[0].Image = "example.com/openmpi:v2"
	rt.SetResourceVersion("2")
	if got := image(); got != "example.com/openmpi:v2" {
		t.Errorf("after the runtime was edited (resourceVersion 2) the Workers run %q, want example.com/openmpi:v2 (before: %q)", got, first)
	}

	node.Template.Spec.Template.Spec.Containers[0].Image = "example.com/openmpi:v3"
	rt.SetUID(types.UID("uid-2"))
	if got := image(); got != "example.com/openmpi:v3" {
		t.Errorf("after the runtime was created again (new UID, same resourceVersion) the Workers run %q, want example.com/openmpi:v3", got)
	}

	rt.SetUID("")
	node.Template.Spec.Template.Spec.Containers[0].Image = "example.com/openmpi:v4"
	if got := image(); got != "example.com/openmpi:v4" {
		t.Errorf("a runtime without UID (read from a file) must not be cached: the Workers run %q, want example.com/openmpi:v4", got)
	}
}
