package audit

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reservations"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

func job(mod func(*trainer.TrainJob)) *trainer.TrainJob {
	j := fixtures.TrainJob("team-a", "train", "mpi").NumNodes(2).Obj()
	j.UID = "uid-1"
	if mod != nil {
		mod(j)
	}
	return j
}

func TestRunning(t *testing.T) {
	cases := map[string]struct {
		job      *trainer.TrainJob
		existing reservations.Existing // keyed by the job's name and UID
		want     bool
	}{
		"no pod, no status: waits for pods":              {job: job(nil), want: false},
		"its pods exist":                                 {job: job(nil), existing: reservations.Existing{"train/uid-1": {"node": 2}}, want: true},
		"another job's pods do not count":                {job: job(nil), existing: reservations.Existing{"other/uid-2": {"node": 2}}, want: false},
		"an earlier job of its name's pods do not count": {job: job(nil), existing: reservations.Existing{"train/uid-0": {"node": 2}}, want: false},
		"the JobSet reports active jobs": {job: job(func(j *trainer.TrainJob) {
			j.Status.JobsStatus = []trainer.JobStatus{{Name: "node", Active: ptr.To[int32](1)}}
		}), want: true},
		"suspended, even with pods still terminating": {job: job(func(j *trainer.TrainJob) { j.Spec.Suspend = ptr.To(true) }),
			existing: reservations.Existing{"train/uid-1": {"node": 2}}, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Running(tc.job, tc.existing); got != tc.want {
				t.Errorf("Running = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRequest(t *testing.T) {
	// shape is what matters of a request: its operation, flags and the
	// suspend of new and old.
	type shape struct {
		Operation              engine.Operation
		Audit, RecordLater     bool
		NewSuspend, OldSuspend *bool
		SameObjects            bool
	}
	shapeOf := func(r *pipeline.Request, j *trainer.TrainJob) *shape {
		if r == nil {
			return nil
		}
		return &shape{Operation: r.Operation, Audit: r.Audit, RecordLater: r.RecordLater,
			NewSuspend: r.TrainJob.Spec.Suspend, OldSuspend: r.OldTrainJob.Spec.Suspend,
			SameObjects: r.TrainJob == j && r.OldTrainJob == j}
	}
	finished := func(typ string) *trainer.TrainJob {
		return job(func(j *trainer.TrainJob) {
			j.Status.Conditions = []metav1.Condition{{Type: typ, Status: metav1.ConditionTrue}}
		})
	}
	now := metav1.Now()
	cases := map[string]struct {
		job     *trainer.TrainJob
		running bool
		want    *shape
	}{
		"running: judged as it is stored, although nothing changes": {job: job(nil), running: true,
			want: &shape{Operation: engine.Update, Audit: true, RecordLater: true, SameObjects: true}},
		"waiting for pods: judged as its resume": {job: job(nil), running: false,
			want: &shape{Operation: engine.Update, Audit: true, RecordLater: true, NewSuspend: ptr.To(false), OldSuspend: ptr.To(true)}},
		"suspended: judged as its resume": {job: job(func(j *trainer.TrainJob) { j.Spec.Suspend = ptr.To(true) }),
			want: &shape{Operation: engine.Update, Audit: true, RecordLater: true, NewSuspend: ptr.To(false), OldSuspend: ptr.To(true)}},
		"complete: not audited": {job: finished(trainer.TrainJobComplete), running: true},
		"failed: not audited":   {job: finished(trainer.TrainJobFailed)},
		"being deleted: not audited": {job: job(func(j *trainer.TrainJob) {
			j.DeletionTimestamp = &now
		}), running: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.job.DeepCopy()
			got := shapeOf(Request(tc.job, tc.running), tc.job)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.job); diff != "" {
				t.Errorf("Request modified the stored job (-before +after):\n%s", diff)
			}
		})
	}
}

func TestJobResults(t *testing.T) {
	j := job(nil)
	ref := TrainJobRef(j)
	policies := []string{"aggregate-quota", "max-duration", "slots-gpus"}
	evaluation := func(vs ...engine.Violation) *pipeline.Evaluation {
		return &pipeline.Evaluation{Governed: true, TrainJob: j, Decision: &engine.Decision{Violations: vs, PolicySetVersion: "v1"}}
	}
	pass := func(p string) Result { return Result{Object: ref, Policy: p, Status: Pass, PolicySetVersion: "v1"} }
	cases := map[string]struct {
		evaluation *pipeline.Evaluation
		err        error
		want       []Result
	}{
		"nothing found: every policy passes": {
			evaluation: evaluation(),
			want:       []Result{pass("aggregate-quota"), pass("max-duration"), pass("slots-gpus")},
		},
		"a denial fails its policy with the admission line, without the policy prefix": {
			evaluation: evaluation(engine.Violation{Policy: "aggregate-quota", Action: engine.EnforceDeny, Field: "spec.trainer", Message: "TrainJob needs 8 cpu (launcher 0 + 2 workers x 4) but ResourceQuota \"q\" has 4 of 4 free; reduce workers to 1, or ask an admin to raise the quota"}),
			want: []Result{
				{Object: ref, Policy: "aggregate-quota", Status: Fail, PolicySetVersion: "v1", Field: "spec.trainer",
					Message: "spec.trainer: TrainJob needs 8 cpu (launcher 0 + 2 workers x 4) but ResourceQuota \"q\" has 4 of 4 free; reduce workers to 1, or ask an admin to raise the quota"},
				pass("max-duration"), pass("slots-gpus"),
			},
		},
		"several violations of one policy: one result, joined; a deny among warnings fails": {
			evaluation: evaluation(
				engine.Violation{Policy: "slots-gpus", Action: engine.EnforceWarn, Field: "spec.trainer.numProcPerNode", Message: "a"},
				engine.Violation{Policy: "slots-gpus", Action: engine.EnforceDeny, Field: "spec.trainer.resourcesPerNode", Message: "b"},
				engine.Violation{Policy: "slots-gpus", Action: engine.EnforceDeny, Field: "spec.trainer.resourcesPerNode", Message: "c"},
			),
			want: []Result{pass("aggregate-quota"), pass("max-duration"),
				{Object: ref, Policy: "slots-gpus", Status: Fail, PolicySetVersion: "v1", Field: "spec.trainer.numProcPerNode, spec.trainer.resourcesPerNode",
					Message: "spec.trainer.numProcPerNode: a; spec.trainer.resourcesPerNode: b; spec.trainer.resourcesPerNode: c"}},
		},
		"a warning warns; a dryrun policy warns and says so; a violation without field": {
			evaluation: evaluation(
				engine.Violation{Policy: "max-duration", Action: engine.EnforceWarn, Message: "long"},
				engine.Violation{Policy: "slots-gpus", Action: engine.EnforceDryRun, Field: "spec.trainer", Message: "x"},
			),
			want: []Result{pass("aggregate-quota"),
				{Object: ref, Policy: "max-duration", Status: Warn, PolicySetVersion: "v1", Message: "long"},
				{Object: ref, Policy: "slots-gpus", Status: Warn, PolicySetVersion: "v1", Field: "spec.trainer", Message: "spec.trainer: x", Enforcement: engine.EnforceDryRun}},
		},
		"a violation of a policy the list does not name is reported": {
			evaluation: evaluation(engine.Violation{Policy: "compliance", Action: engine.EnforceDeny, Field: "spec", Message: "no"}),
			want: []Result{pass("aggregate-quota"),
				{Object: ref, Policy: "compliance", Status: Fail, PolicySetVersion: "v1", Field: "spec", Message: "spec: no"},
				pass("max-duration"), pass("slots-gpus")},
		},
		"not governed (not MPI): no result": {evaluation: &pipeline.Evaluation{TrainJob: j}},
		"could not be judged: one error result with the reason": {
			err:  errors.New(`spec.runtimeRef: ClusterTrainingRuntime "mpi" not found`),
			want: []Result{{Object: ref, Policy: EvaluationPolicy, Status: Error, Message: `spec.runtimeRef: ClusterTrainingRuntime "mpi" not found`}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := JobResults(j, policies, tc.evaluation, tc.err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRuntimeResults(t *testing.T) {
	cases := map[string]struct {
		runtime      *trainer.ClusterTrainingRuntime
		want         Status
		wantField    string
		wantMessages []string
	}{
		"a curated runtime passes": {runtime: curated(t), want: Pass},
		"a runtime the rules only warn about warns": {
			runtime: fixtures.MPIRuntime("mpi").Cluster(), // no Istio opt-out, readiness probe, dependsOn
			want:    Warn, wantMessages: []string{"readiness probe", "; "},
		},
		"replicated Workers fail with the rule's reason and fix": {
			runtime: func() *trainer.ClusterTrainingRuntime {
				rt := fixtures.MPIRuntime("mpi").Cluster()
				rt.Spec.Template.Spec.ReplicatedJobs[1].Replicas = 2
				return rt
			}(),
			want: Fail, wantField: "spec.template.spec.replicatedJobs[1].replicas",
			wantMessages: []string{"spec.template.spec.replicatedJobs[1].replicas: ", "must be 1", "numNodes"},
		},
		"an unknown MPI implementation label warns": {
			runtime: fixtures.MPIRuntime("mpi").Label(catalog.LabelMPIImplementation, "lam").Cluster(),
			want:    Warn, wantMessages: []string{"not a known MPI implementation"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rt := tc.runtime
			got := RuntimeResults(ClusterRuntimeRef(rt), &rt.ObjectMeta, &rt.Spec)
			if len(got) != 1 {
				t.Fatalf("got %d results, want 1: %+v", len(got), got)
			}
			r := got[0]
			if diff := cmp.Diff(Result{Object: corev1.ObjectReference{APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "ClusterTrainingRuntime", Name: rt.Name}, Policy: RuntimeTemplatePolicy, Status: tc.want},
				Result{Object: r.Object, Policy: r.Policy, Status: r.Status}); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if tc.wantField != "" && r.Field != tc.wantField {
				t.Errorf("field = %q, want %q", r.Field, tc.wantField)
			}
			for _, m := range tc.wantMessages {
				if !strings.Contains(r.Message, m) {
					t.Errorf("message %q does not say %q", r.Message, m)
				}
			}
			if tc.want == Pass && r.Message != "" {
				t.Errorf("a pass has message %q", r.Message)
			}
		})
	}
}

// curated is the first runtime of mpiguard's catalog: it follows every rule.
func curated(t *testing.T) *trainer.ClusterTrainingRuntime {
	rts, err := catalog.Load()
	if err != nil || len(rts) == 0 {
		t.Fatalf("loading the catalog: %v (%d runtimes)", err, len(rts))
	}
	return rts[0]
}
