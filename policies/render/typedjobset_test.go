package render

import (
	stdjson "encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetv1alpha2ac "sigs.k8s.io/jobset/client-go/applyconfiguration/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// TestTypedJobSetMatchesEncodingJSON: typedJobSet reads the rendered JobSet
// with github.com/goccy/go-json (a third of a render faster than
// encoding/json). On randomly filled JobSets — every pod spec field, nil and
// set, odd strings — it must give exactly what encoding/json gives.
func TestTypedJobSetMatchesEncodingJSON(t *testing.T) {
	containers := 0
	for seed := range int64(300) {
		f := fixtures.RandomFiller(seed)
		var js jobsetv1alpha2.JobSet
		f.Fill(&js)
		data, err := stdjson.Marshal(&js)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, rj := range js.Spec.ReplicatedJobs {
			containers += len(rj.Template.Spec.Template.Spec.Containers)
		}
		ac := &jobsetv1alpha2ac.JobSetApplyConfiguration{}
		if err := stdjson.Unmarshal(data, ac); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}

		want := &jobsetv1alpha2.JobSet{}
		acJSON, err := stdjson.Marshal(ac)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := stdjson.Unmarshal(acJSON, want); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		got, err := typedJobSet(ac)
		if err != nil {
			t.Fatalf("seed %d: typedJobSet: %v", seed, err)
		}
		if !equality.Semantic.DeepEqual(want, got) {
			t.Fatalf("seed %d: typedJobSet differs from encoding/json (-encoding/json +typedJobSet):\n%s", seed, cmp.Diff(want, got))
		}
	}
	// The random JobSets must carry pod templates, or this test proves nothing.
	if containers < 200 {
		t.Fatalf("the random JobSets held only %d containers; fill deeper", containers)
	}
}
