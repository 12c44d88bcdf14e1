package catalog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// TestFailedRankFailsTheJob: every published runtime (each version, alias and
// gang variant) fails its job on the first failed or evicted Worker or
// launcher pod, naming the failed Job, instead of retrying a rank mpirun has
// lost: its Jobs give up on their first failed pod and its JobSet on its
// first failed Job. The Trainer (v2.3, pkg/runtime/core/trainingruntime.go)
// copies the template's JobSet spec, failurePolicy included, to the JobSet.
func TestFailedRankFailsTheJob(t *testing.T) {
	rts, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	want := &jobsetv1alpha2.FailurePolicy{MaxRestarts: 0, Rules: []jobsetv1alpha2.FailurePolicyRule{{
		Name: "mpiRankLost", Action: jobsetv1alpha2.FailJobSet, TargetReplicatedJobs: []string{"node", "launcher"},
	}}}
	for _, rt := range rts {
		spec := rt.Spec.Template.Spec
		if diff := cmp.Diff(want, spec.FailurePolicy); diff != "" {
			t.Errorf("%s: failurePolicy (-want +got):\n%s", rt.Name, diff)
		}
		for _, rj := range spec.ReplicatedJobs {
			if got := rj.Template.Spec.BackoffLimit; !ptr.Equal(got, ptr.To[int32](0)) {
				t.Errorf("%s: replicated job %s has backoffLimit %v, want 0", rt.Name, rj.Name, ptr.Deref(got, -1))
			}
		}
		gang := rt.Spec.PodGroupPolicy
		if gang != nil && gang.Coscheduling != nil && ptr.Deref(gang.Coscheduling.ScheduleTimeoutSeconds, 0) <= 0 {
			t.Errorf("%s: a coscheduling gang without a schedule timeout", rt.Name)
		}
	}
}
