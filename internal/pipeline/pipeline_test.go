package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/gang"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/networkpolicies"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// memCluster is a Cluster held in memory (a pure unit test).
type memCluster struct {
	runtimes map[string]client.Object
	ns       Namespace
	existing map[string]bool
	queues   *gang.Queues // VolcanoQueues (gang_test.go)
}

func (m memCluster) JobSet(context.Context, *trainer.TrainJob) (*jobsetv1alpha2.JobSet, error) {
	return nil, nil
}

func (m memCluster) Snapshot(context.Context, *trainer.TrainJob) (client.Object, error) {
	return nil, nil
}

// ObjectExists: the objects named in existing exist ("Kind namespace/name").
func (m memCluster) ObjectExists(_ context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (bool, error) {
	return m.existing[gvk.Kind+" "+key.String()], nil
}

func (m memCluster) Runtime(_ context.Context, job *trainer.TrainJob) (client.Object, error) {
	rt, ok := m.runtimes[job.Spec.RuntimeRef.Name]
	if !ok {
		return nil, fmt.Errorf("runtime %q not found", job.Spec.RuntimeRef.Name)
	}
	rt = rt.DeepCopyObject().(client.Object)
	rt.GetObjectKind().SetGroupVersionKind(trainer.GroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind))
	return rt, nil
}

func (m memCluster) Namespace(_ context.Context, name string) (*Namespace, error) {
	ns := m.ns
	ns.Namespace = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: m.ns.Namespace.Labels}}
	return &ns, nil
}

func testPipeline(t *testing.T) *Pipeline {
	t.Helper()
	p, err := NewDefault(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testCluster(t *testing.T) memCluster {
	t.Helper()
	mpi := fixtures.GPUWorkersRuntime("gpu", "4").Cluster()
	torch := fixtures.TorchRuntime("torch").Cluster()
	if err := render.ApplyDefaults(mpi, torch); err != nil {
		t.Fatal(err)
	}
	return memCluster{
		runtimes: map[string]client.Object{"gpu": mpi, "torch": torch},
		ns: Namespace{
			Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"mpiguard.io/data-residency": "eu"}}},
			Quotas:    []corev1.ResourceQuota{*fixtures.ResourceQuota("team-a", "gpus", "requests.nvidia.com/gpu", "16")},
		},
	}
}

// TestAdmitIsMutateThenValidate: Admit, what `mpiguard check` and audit run,
// gives the evaluation the two webhooks give one after the other: the
// mutating pass's patch applied to the object, then the validating pass on
// the result.
func TestAdmitIsMutateThenValidate(t *testing.T) {
	p, c := testPipeline(t), testCluster(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		job  *trainer.TrainJob
	}{
		{"fits", fixtures.TrainJob("team-a", "fits", "gpu").NumNodes(2).NumProcPerNode(4).Obj()},
		{"over quota", fixtures.TrainJob("team-a", "big", "gpu").NumNodes(8).NumProcPerNode(4).Obj()},
		{"slots differ from GPUs", fixtures.TrainJob("team-a", "slots", "gpu").NumNodes(2).NumProcPerNode(8).Obj()},
		{"deadline given", fixtures.TrainJob("team-a", "deadline", "gpu").NumNodes(2).NumProcPerNode(4).ActiveDeadlineSeconds(7200).Obj()},
		{"istio opt-in", fixtures.TrainJob("team-a", "istio", "gpu").NumNodes(2).NumProcPerNode(4).Label("sidecar.istio.io/inject", "true").Obj()},
		{"not MPI", fixtures.TrainJob("team-a", "torch", "torch").Obj()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.job)
			if err != nil {
				t.Fatal(err)
			}
			req := func(job *trainer.TrainJob, raw []byte) *Request {
				return &Request{Operation: engine.Create, User: "u", TrainJob: job, Raw: raw}
			}
			admit, err := p.Run(ctx, c, req(tc.job, raw), Admit)
			if err != nil {
				t.Fatal(err)
			}
			mutate, err := p.Run(ctx, c, req(tc.job, raw), Mutate)
			if err != nil {
				t.Fatal(err)
			}
			mutated := raw
			if len(mutate.Patch) > 0 {
				ops, err := json.Marshal(mutate.Patch)
				if err != nil {
					t.Fatal(err)
				}
				patch, err := jsonpatch.DecodePatch(ops)
				if err != nil {
					t.Fatal(err)
				}
				if mutated, err = patch.Apply(raw); err != nil {
					t.Fatal(err)
				}
			}
			job := &trainer.TrainJob{}
			if err := json.Unmarshal(mutated, job); err != nil {
				t.Fatal(err)
			}
			validate, err := p.Run(ctx, c, req(job, mutated), Validate)
			if err != nil {
				t.Fatal(err)
			}
			if admit.Governed != validate.Governed || admit.Allowed() != validate.Allowed() {
				t.Fatalf("admit: governed %t allowed %t; mutate then validate: governed %t allowed %t",
					admit.Governed, admit.Allowed(), validate.Governed, validate.Allowed())
			}
			if diff := cmp.Diff(validate.DenialMessage(), admit.DenialMessage()); diff != "" {
				t.Errorf("denial (-mutate then validate +admit):\n%s", diff)
			}
			if diff := cmp.Diff(validate.Warnings(), admit.Warnings()); diff != "" {
				t.Errorf("warnings (-mutate then validate +admit):\n%s", diff)
			}
			if diff := cmp.Diff(job.Spec, admit.TrainJob.Spec); admit.Governed && diff != "" {
				t.Errorf("judged job (-patched by the mutating pass +admit's):\n%s", diff)
			}
			if diff := cmp.Diff(mutate.Patch, admit.Patch); diff != "" {
				t.Errorf("patch (-mutate +admit):\n%s", diff)
			}
		})
	}
}

// TestRunLeavesTheRequestAlone: Run never modifies the request's objects,
// Admit included (it applies the mutation to a copy).
func TestRunLeavesTheRequestAlone(t *testing.T) {
	p, c := testPipeline(t), testCluster(t)
	job := fixtures.TrainJob("team-a", "run", "gpu").NumNodes(2).NumProcPerNode(4).Obj()
	before := job.DeepCopy()
	for _, stage := range []Stage{Mutate, Validate, Admit} {
		v, err := p.Run(context.Background(), c, &Request{Operation: engine.Create, TrainJob: job}, stage)
		if err != nil {
			t.Fatal(err)
		}
		if stage != Validate && len(v.Patch) == 0 {
			t.Errorf("%s: no patch; want the default deadline and mpiguard's entry", stage)
		}
		if diff := cmp.Diff(before, job); diff != "" {
			t.Errorf("%s modified the request's TrainJob (-before +after):\n%s", stage, diff)
		}
	}
}

// TestReservedLeavesOutTheJobDecided: a job is never counted twice against
// a quota, once as itself and once as its own reservation (a resume, or a
// create decided again after a lost write, finds its own entry).
func TestReservedLeavesOutTheJobDecided(t *testing.T) {
	p, c := testPipeline(t), testCluster(t)
	ctx := context.Background()
	job := fixtures.TrainJob("team-a", "run", "gpu").NumNodes(3).NumProcPerNode(4).Obj() // 12 of 16 GPUs
	v, err := p.Run(ctx, c, &Request{Operation: engine.Create, TrainJob: job}, Admit)
	if err != nil || !v.Allowed() {
		t.Fatalf("alone: allowed %t, %v; want allowed", v.Allowed(), err)
	}
	parts := quota.PartsOf(v.View)
	for _, tc := range []struct {
		holder string
		want   bool
	}{
		{"team-a/run", true},    // its own reservation: left out
		{"team-a/other", false}, // another job holding as much: 24 of 16
	} {
		held := &input.QuotaState{Quotas: c.ns.Quotas, Reservations: []quota.Reservation{{TrainJob: tc.holder, Parts: parts}}}
		v, err := p.RunAgainst(ctx, c, &Request{Operation: engine.Create, TrainJob: job}, Admit, held)
		if err != nil {
			t.Fatal(err)
		}
		if v.Allowed() != tc.want {
			t.Errorf("%s holding 12 GPUs: allowed %t, want %t (%s)", tc.holder, v.Allowed(), tc.want, v.DenialMessage())
		}
	}
}

// TestAuditJudgesUnchangedJobs: admission lets an update that changes
// nothing the job runs pass unjudged (a finalizer removed must never be
// blocked by a policy tightened since); audit asks about the stored job as
// it is, and is answered.
func TestAuditJudgesUnchangedJobs(t *testing.T) {
	p, c := testPipeline(t), testCluster(t)
	job := fixtures.TrainJob("team-a", "run", "gpu").NumNodes(2).NumProcPerNode(8).Obj() // slots differ from GPUs
	for _, audit := range []bool{false, true} {
		v, err := p.Run(context.Background(), c, &Request{Operation: engine.Update, TrainJob: job, OldTrainJob: job, Audit: audit}, Validate)
		if err != nil {
			t.Fatal(err)
		}
		if v.Governed != audit || v.Allowed() == audit {
			t.Errorf("audit %t: governed %t, allowed %t; want governed %t, allowed %t (%s)", audit, v.Governed, v.Allowed(), audit, !audit, v.DenialMessage())
		}
	}
}

// TestJudgeIsRunOnAnotherQuotaState: judging an evaluation again against
// another quota state gives what a whole run against that state gives, and
// so does judging a prepared one, the state's reservations built once and
// shared by both judgements (a job's own reservation is still
// left out of its decision).
func TestJudgeIsRunOnAnotherQuotaState(t *testing.T) {
	p, c := testPipeline(t), testCluster(t)
	ctx := context.Background()
	req := &Request{Operation: engine.Create, TrainJob: fixtures.TrainJob("team-a", "run", "gpu").NumNodes(3).NumProcPerNode(4).Obj()} // 12 of 16 GPUs
	first, err := p.Run(ctx, c, req, Admit)
	if err != nil || !first.Allowed() {
		t.Fatalf("alone: allowed %t, %v; want allowed", first.Allowed(), err)
	}
	parts := quota.PartsOf(first.View)
	for _, holder := range []string{"team-a/run", "team-a/other"} {
		reserved := []quota.Reservation{{TrainJob: holder, Parts: parts}}
		want, err := p.RunAgainst(ctx, c, req, Admit, &input.QuotaState{Quotas: c.ns.Quotas, Reservations: reserved})
		if err != nil {
			t.Fatal(err)
		}
		for i, state := range []*input.QuotaState{{Quotas: c.ns.Quotas, Reservations: reserved}, input.NewQuotaState(c.ns.Quotas, reserved, nil)} {
			made := []string{"as a literal", "by NewQuotaState"}[i]
			got, err := p.Judge(ctx, first, state)
			if err != nil {
				t.Fatal(err)
			}
			if got.Allowed() != want.Allowed() || got.DenialMessage() != want.DenialMessage() {
				t.Errorf("%s holding 12 GPUs, state made %s: judged again allowed %t %q; run allowed %t %q", holder, made, got.Allowed(), got.DenialMessage(), want.Allowed(), want.DenialMessage())
			}
			prepared, err := p.Prepare(ctx, c, req, Admit)
			if err != nil {
				t.Fatal(err)
			}
			if prepared.Decision != nil {
				t.Errorf("Prepare decided: %+v", prepared.Decision)
			}
			if got, err = p.Judge(ctx, prepared, state); err != nil {
				t.Fatal(err)
			}
			if got.Allowed() != want.Allowed() || got.DenialMessage() != want.DenialMessage() {
				t.Errorf("%s holding 12 GPUs, state made %s: prepared and judged allowed %t %q; run allowed %t %q", holder, made, got.Allowed(), got.DenialMessage(), want.Allowed(), want.DenialMessage())
			}
		}
	}
	if !first.Allowed() {
		t.Error("Judge changed the evaluation it was given")
	}
}

// TestLastAdmissionIgnoresAudits: audit paces itself while admission is busy
// (internal/audit), so its own runs must not look like admission.
func TestLastAdmissionIgnoresAudits(t *testing.T) {
	p, c := testPipeline(t), testCluster(t)
	job := fixtures.TrainJob("team-a", "run", "gpu").NumNodes(2).Obj()
	audit := &Request{Operation: engine.Update, TrainJob: job, OldTrainJob: job, Audit: true}
	if _, err := p.Run(context.Background(), c, audit, Validate); err != nil {
		t.Fatal(err)
	}
	if got := p.LastAdmission(); !got.IsZero() {
		t.Fatalf("after an audit only: LastAdmission = %v, want zero", got)
	}
	before := time.Now()
	if _, err := p.Run(context.Background(), c, &Request{Operation: engine.Create, TrainJob: job}, Validate); err != nil {
		t.Fatal(err)
	}
	if got := p.LastAdmission(); got.Before(before) {
		t.Errorf("after an admission at %v: LastAdmission = %v", before, got)
	}
}

// A namespace an admin labelled mpiguard.io/exempt=true governs nothing: the
// job that is denied elsewhere is neither mutated nor judged; any other
// value of the label exempts nothing.
func TestExemptNamespaceIsNotGoverned(t *testing.T) {
	p := testPipeline(t)
	ctx := context.Background()
	job := fixtures.TrainJob("team-a", "slots", "gpu").NumNodes(2).NumProcPerNode(8).Obj()
	for _, tc := range []struct {
		value        string
		wantGoverned bool
	}{{"true", false}, {"yes", true}, {"", true}} {
		t.Run("label="+tc.value, func(t *testing.T) {
			c := testCluster(t)
			if tc.value != "" {
				c.ns.Namespace.Labels = map[string]string{ExemptLabel: tc.value}
			}
			for _, stage := range []Stage{Mutate, Validate, Admit} {
				v, err := p.Run(ctx, c, &Request{Operation: engine.Create, User: "u", TrainJob: job.DeepCopy()}, stage)
				if err != nil {
					t.Fatal(err)
				}
				if v.Governed != tc.wantGoverned {
					t.Errorf("stage %v: governed %v, want %v", stage, v.Governed, tc.wantGoverned)
				}
				if !tc.wantGoverned && (v.Mutation != nil || v.Decision != nil || !v.Allowed()) {
					t.Errorf("stage %v: an exempt namespace's job was mutated or judged: %+v", stage, v)
				}
				if tc.wantGoverned && stage != Mutate && v.Allowed() {
					t.Errorf("stage %v: the job with Slots per worker 8 on 4 GPUs is allowed", stage)
				}
			}
		})
	}
}

// TestCreateSaysItsNetworkPolicy: with DescribeNetworkPolicies, a create's
// verdict names the NetworkPolicy template its job gets, in every stage; an
// update's (audit's) does not; without it, none does.
func TestCreateSaysItsNetworkPolicy(t *testing.T) {
	c := testCluster(t)
	job := fixtures.TrainJob("team-a", "run", "gpu").NumNodes(2).NumProcPerNode(4).Obj()
	ctx := context.Background()
	if v, err := testPipeline(t).Run(ctx, c, &Request{Operation: engine.Create, TrainJob: job}, Admit); err != nil || v.NetworkPolicy != "" {
		t.Fatalf("without DescribeNetworkPolicies: %q, %v; want none", v.NetworkPolicy, err)
	}
	p := testPipeline(t)
	p.DescribeNetworkPolicies(networkpolicies.Options{DefaultTemplate: networkpolicies.TemplateJobIsolated})
	want := `network policy "job-isolated" (controller default): no pod outside the job`
	for _, stage := range []Stage{Mutate, Validate, Admit} {
		v, err := p.Run(ctx, c, &Request{Operation: engine.Create, TrainJob: job}, stage)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(v.NetworkPolicy, want) {
			t.Errorf("%s: %q, want it to start with %q", stage, v.NetworkPolicy, want)
		}
	}
	v, err := p.Run(ctx, c, &Request{Operation: engine.Update, TrainJob: job, OldTrainJob: job, Audit: true}, Validate)
	if err != nil || !v.Governed || v.NetworkPolicy != "" {
		t.Errorf("audit: governed %t, %q, %v; want governed, no network policy line", v.Governed, v.NetworkPolicy, err)
	}
}
