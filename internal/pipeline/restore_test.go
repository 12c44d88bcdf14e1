package pipeline

import (
	"context"
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	jp "gomodules.xyz/jsonpatch/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

func TestRestoreStored(t *testing.T) {
	entry := func(label string) trainer.RuntimePatch {
		return trainer.RuntimePatch{
			Manager: engine.AdmissionManager,
			Time:    &metav1.Time{},
			TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{
				ReplicatedJobs: []trainer.ReplicatedJobPatch{{Name: "node", Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{
					Template: &trainer.PodTemplatePatch{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"sidecar.istio.io/inject": label}}},
				}}}},
			}}},
		}
	}
	kueue := trainer.RuntimePatch{Manager: "kueue.x-k8s.io/manager"}
	job := func(deadline int64, patches ...trainer.RuntimePatch) *trainer.TrainJob {
		return &trainer.TrainJob{Spec: trainer.TrainJobSpec{ActiveDeadlineSeconds: deadline, RuntimePatches: patches}}
	}
	stored := job(86400, entry("false"))
	for _, tc := range []struct {
		name     string
		mutation engine.Mutation // what the policies asked for
		old, job *trainer.TrainJob
		want     engine.Mutation
	}{{
		name: "a CREATE has nothing stored",
		job:  job(0),
	}, {
		name: "an update that keeps both",
		old:  stored,
		job:  job(86400, entry("false")),
	}, {
		name: "an update written without both (a client of an older TrainJob type)",
		old:  stored,
		job:  job(0),
		want: engine.Mutation{ActiveDeadlineSeconds: new(int64(86400)), RuntimePatch: new(entry("false"))},
	}, {
		name: "an update that keeps another manager's entry and drops mpiguard's",
		old:  job(86400, kueue, entry("false")),
		job:  job(86400, kueue),
		want: engine.Mutation{RuntimePatch: new(entry("false"))},
	}, {
		name: "a changed entry is someone's change: left for mpiguard-entry to deny",
		old:  stored,
		job:  job(86400, entry("true")),
	}, {
		name: "a stored job without a deadline or an entry",
		old:  job(0, kueue),
		job:  job(0),
	}, {
		name: "a changed deadline is left for the CRD and max-duration",
		old:  stored,
		job:  job(3600, entry("false")),
	}, {
		name:     "what the policies ask for comes first",
		mutation: engine.Mutation{ActiveDeadlineSeconds: new(int64(7200)), RuntimePatch: new(entry("x"))},
		old:      stored,
		job:      job(0),
		want:     engine.Mutation{ActiveDeadlineSeconds: new(int64(7200)), RuntimePatch: new(entry("x"))},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.mutation
			restoreStored(&got, tc.old, tc.job)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mutation (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUpdateWithoutDecisionsGetsThemBack: an update written by a client
// compiled against a TrainJob type without spec.runtimePatches and
// spec.activeDeadlineSeconds (Kueue's resume) gets mpiguard's stored entry
// and deadline back from the mutating pass, which the validating pass then
// allows; the mutating pass on its own result adds nothing (reinvocation);
// Admit judges the same object.
func TestUpdateWithoutDecisionsGetsThemBack(t *testing.T) {
	p, c := testPipeline(t), testCluster(t) // the namespace is in the eu residency zone
	ctx := context.Background()
	created, err := p.Run(ctx, c, &Request{Operation: engine.Create, TrainJob: fixtures.TrainJob("team-a", "run", "gpu").NumNodes(2).NumProcPerNode(4).Suspend(true).Obj()}, Admit)
	if err != nil || !created.Allowed() {
		t.Fatalf("create: allowed %t, %v; want allowed", created.Allowed(), err)
	}
	stored := created.TrainJob
	if stored.Spec.ActiveDeadlineSeconds == 0 || input.OwnEntryIndex(stored) < 0 {
		t.Fatalf("stored job has deadline %d and entry at %d; want both", stored.Spec.ActiveDeadlineSeconds, input.OwnEntryIndex(stored))
	}

	resume := stored.DeepCopy()
	resume.Spec.Suspend = ptr.To(false)
	resume.Spec.RuntimePatches, resume.Spec.ActiveDeadlineSeconds = nil, 0
	raw, err := json.Marshal(resume)
	if err != nil {
		t.Fatal(err)
	}
	update := func(job *trainer.TrainJob, raw []byte) *Request {
		return &Request{Operation: engine.Update, User: "kueue", TrainJob: job, OldTrainJob: stored, Raw: raw}
	}
	mutate, err := p.Run(ctx, c, update(resume, raw), Mutate)
	if err != nil {
		t.Fatal(err)
	}
	patched := applyPatch(t, raw, mutate.Patch)
	got := &trainer.TrainJob{}
	if err := json.Unmarshal(patched, got); err != nil {
		t.Fatal(err)
	}
	want := stored.Spec.DeepCopy()
	want.Suspend = ptr.To(false)
	if diff := cmp.Diff(*want, got.Spec); diff != "" {
		t.Errorf("spec after the mutating pass (-stored, resumed +got):\n%s", diff)
	}

	again, err := p.Run(ctx, c, update(got, patched), Mutate)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Patch) != 0 {
		t.Errorf("the mutating pass on its own result patches again: %v", again.Patch)
	}
	validate, err := p.Run(ctx, c, update(got, patched), Validate)
	if err != nil {
		t.Fatal(err)
	}
	if !validate.Allowed() {
		t.Errorf("the restored resume is denied: %s", validate.DenialMessage())
	}
	admit, err := p.Run(ctx, c, update(resume, raw), Admit)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got.Spec, admit.TrainJob.Spec); diff != "" {
		t.Errorf("Admit judged another job (-mutate then validate +admit):\n%s", diff)
	}
	if admit.Allowed() != validate.Allowed() || admit.DenialMessage() != validate.DenialMessage() {
		t.Errorf("admit allowed %t %q; mutate then validate allowed %t %q", admit.Allowed(), admit.DenialMessage(), validate.Allowed(), validate.DenialMessage())
	}
}

// TestUpdateWithoutDecisionsDeniedUnrestored: the validating pass alone, as if
// the entry and the deadline were lost after mpiguard's mutation, denies the
// update, saying what was removed (mpiguard-entry, max-duration).
func TestUpdateWithoutDecisionsDeniedUnrestored(t *testing.T) {
	p, c := testPipeline(t), testCluster(t)
	ctx := context.Background()
	created, err := p.Run(ctx, c, &Request{Operation: engine.Create, TrainJob: fixtures.TrainJob("team-a", "run", "gpu").NumNodes(2).NumProcPerNode(4).Obj()}, Admit)
	if err != nil || !created.Allowed() {
		t.Fatalf("create: allowed %t, %v; want allowed", created.Allowed(), err)
	}
	stored := created.TrainJob
	stripped := stored.DeepCopy()
	stripped.Spec.RuntimePatches, stripped.Spec.ActiveDeadlineSeconds = nil, 0
	v, err := p.Run(ctx, c, &Request{Operation: engine.Update, TrainJob: stripped, OldTrainJob: stored}, Validate)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range v.Decision.Denials() {
		got = append(got, x.Policy+" "+x.Field)
	}
	want := []string{
		// launcher and Workers are no longer restricted; with no runtime
		// patches of its own left, the job is pointed at its runtime
		"data-residency spec.runtimeRef", "data-residency spec.runtimeRef",
		"max-duration spec.activeDeadlineSeconds",
		"mpiguard-entry spec.runtimePatches",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("denials (-want +got):\n%s\n%s", diff, v.DenialMessage())
	}
}

func applyPatch(t *testing.T, raw []byte, ops []jp.JsonPatchOperation) []byte {
	t.Helper()
	if len(ops) == 0 {
		return raw
	}
	b, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("applying %s: %v", b, err)
	}
	return out
}

// TestUpdateSettingDeadlineOverCeilingDenied: the CRD's immutability rule
// does not stop an update that gives a deadline to a job stored without one;
// max-duration judges it on UPDATE as on CREATE.
func TestUpdateSettingDeadlineOverCeilingDenied(t *testing.T) {
	p, c := testPipeline(t), testCluster(t)
	ctx := context.Background()
	created, err := p.Run(ctx, c, &Request{Operation: engine.Create, TrainJob: fixtures.TrainJob("team-a", "run", "gpu").NumNodes(2).NumProcPerNode(4).Suspend(true).Obj()}, Admit)
	if err != nil || !created.Allowed() {
		t.Fatalf("create: allowed %t, %v; want allowed", created.Allowed(), err)
	}
	stored := created.TrainJob.DeepCopy()
	stored.Spec.ActiveDeadlineSeconds = 0 // stored before mpiguard governed it
	for _, tc := range []struct {
		deadline int64
		want     []string
	}{
		{3600, nil},
		{720000, []string{"[max-duration] spec.activeDeadlineSeconds: TrainJob may run for 200 hours (spec.activeDeadlineSeconds 720000) but the cluster allows at most 168 hours; set spec.activeDeadlineSeconds to 604800 (168 hours) or less, or ask an admin to raise the limit"}},
	} {
		update := stored.DeepCopy()
		update.Spec.ActiveDeadlineSeconds = tc.deadline
		update.Spec.Suspend = ptr.To(false)
		v, err := p.Run(ctx, c, &Request{Operation: engine.Update, TrainJob: update, OldTrainJob: stored}, Admit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, x := range v.Decision.Denials() {
			got = append(got, ViolationLine(x))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("deadline %d: denials (-want +got):\n%s", tc.deadline, diff)
		}
	}
}
