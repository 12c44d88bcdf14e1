package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// admissionFlow runs a TrainJob through what the apiserver calls, with the
// embedded policies: the mutating pass, its mutation applied, then the
// validating pass on the result. old is the stored TrainJob of an UPDATE
// (nil: CREATE). It returns the validating decision and the object decided.
type admissionFlow struct {
	t       *testing.T
	e       *Engine
	r       *render.Renderer
	runtime *trainer.ClusterTrainingRuntime
}

func newAdmissionFlow(t *testing.T, rt *fixtures.RuntimeBuilder) *admissionFlow {
	t.Helper()
	ctx := context.Background()
	e, err := NewDefault(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.NewRenderer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runtime := rt.Cluster()
	if err := render.ApplyDefaults(runtime); err != nil {
		t.Fatal(err)
	}
	return &admissionFlow{t: t, e: e, r: r, runtime: runtime}
}

func (f *admissionFlow) admit(job, old *trainer.TrainJob) (*Decision, *trainer.TrainJob) {
	f.t.Helper()
	ctx := context.Background()
	job = job.DeepCopy()
	if err := render.ApplyDefaults(job); err != nil {
		f.t.Fatal(err)
	}
	req := &input.Source{
		Operation: Create, User: "alice", TrainJob: job, OldTrainJob: old,
		Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: job.Namespace}},
		Runtime:   input.RuntimeMeta{Kind: trainer.ClusterTrainingRuntimeKind, Name: f.runtime.Name},
	}
	if old != nil {
		req.Operation = Update
	}
	view := func() *render.JobView {
		v, err := f.r.Render(ctx, render.Input{TrainJob: job, Runtime: f.runtime, OwnManager: AdmissionManager})
		if err != nil {
			f.t.Fatal(err)
		}
		return v
	}
	req.View = view()
	m, err := f.e.Mutations(ctx, request(req))
	if err != nil {
		f.t.Fatal(err)
	}
	if m.Apply(job) {
		req.View = view()
	}
	d, err := f.e.Decide(ctx, request(req))
	if err != nil {
		f.t.Fatal(err)
	}
	return d, job
}

// violationsOf lists "policy field: message" of d's denials of the given policies.
func violationsOf(d *Decision, policies ...string) []string {
	var out []string
	for _, v := range d.Denials() {
		for _, p := range policies {
			if v.Policy == p {
				out = append(out, v.Policy+" "+v.Field+": "+v.Message)
			}
		}
	}
	return out
}

// entry is a runtime patch setting the pod template of replicated job node.
func entry(manager string, pod trainer.PodTemplatePatch) trainer.RuntimePatch {
	return trainer.RuntimePatch{Manager: manager, TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{
		Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
			Name: "node", Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &pod}},
		}}}},
	}}
}

func withEnv(name, value string) trainer.PodTemplatePatch {
	return trainer.PodTemplatePatch{Spec: &trainer.PodSpecPatch{Containers: []trainer.ContainerPatch{{
		Name: "node", Env: []corev1.EnvVar{{Name: name, Value: value}},
	}}}}
}

func withLabel(k, v string) trainer.PodTemplatePatch {
	return trainer.PodTemplatePatch{Metadata: &metav1.ObjectMeta{Labels: map[string]string{k: v}}}
}

// An entry under mpiguard's manager that mpiguard did not write is denied,
// with what is wrong and the fix; its env is judged like any other entry's.
// mpiguard's own entry (as the mutating pass writes it, or stored with the
// job on UPDATE) is not.
func TestPosingEntryIsDenied(t *testing.T) {
	f := newAdmissionFlow(t, fixtures.MPIRuntime("openmpi"))
	job := func(ns string, patches ...trainer.RuntimePatch) *trainer.TrainJob {
		j := fixtures.TrainJob(ns, "train", "openmpi").NumNodes(2).Obj()
		j.Spec.RuntimePatches = patches
		return j
	}
	const envPath = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers"

	// The job as admitted, with mpiguard's entry; then an UPDATE of it.
	created, stored := f.admit(job("team-a"), nil)
	if !created.Allowed {
		t.Fatalf("plain job denied: %v", created.Violations)
	}
	changed := stored.DeepCopy()
	own := &changed.Spec.RuntimePatches[0]
	own.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.Metadata.Labels["sidecar.istio.io/inject"] = "true"
	relabelled, _ := f.admit(changed, stored)
	unchanged := stored.DeepCopy()
	unchanged.Spec.Trainer.NumNodes = new(int32(3))
	resized, _ := f.admit(unchanged, stored)
	withEnvUpdate := stored.DeepCopy()
	withEnvUpdate.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec = withEnv("OMPI_MCA_plm_rsh_args", "-p 2222").Spec
	envUpdated, _ := f.admit(withEnvUpdate, stored)

	posingEnv, _ := f.admit(job("team-a", entry(AdmissionManager, withEnv("OMPI_MCA_plm_rsh_args", "-p 2222"))), nil)
	exemptNS, _ := f.admit(job("istio-system", entry(AdmissionManager, withLabel("team", "bench"))), nil)
	sameAsOwn, _ := f.admit(job("team-a", stored.Spec.RuntimePatches...), nil)

	for _, tc := range []struct {
		name string
		d    *Decision
		// want are substrings of the denials of mpiguard-entry and slots-gpus, in order.
		want []string
	}{
		{"CREATE, no entry", created, nil},
		{"CREATE, entry as mpiguard writes it", sameAsOwn, nil},
		{"UPDATE keeping the stored entry", resized, nil},
		{"CREATE, entry with env", posingEnv, []string{
			"mpiguard-entry spec.runtimePatches[0]: spec.runtimePatches[0] has manager mpiguard.io/admission, which is reserved for mpiguard's own entry, but sets " + envPath + ", which mpiguard never writes",
			"slots-gpus " + envPath + "[0].env[0]: " + envPath + "[0].env[0] sets OMPI_MCA_plm_rsh_args, which the MPI plugin reserves",
		}},
		{"CREATE where mpiguard writes no entry", exemptNS, []string{
			"mpiguard-entry spec.runtimePatches[0]: spec.runtimePatches[0] has manager mpiguard.io/admission, which is reserved for mpiguard's own entry, but mpiguard writes no such entry for this TrainJob",
		}},
		{"UPDATE changing the stored entry", relabelled, []string{
			"mpiguard-entry spec.runtimePatches[0]: spec.runtimePatches[0] has manager mpiguard.io/admission, which is reserved for mpiguard's own entry, but is not mpiguard's entry for this TrainJob (it differs at spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[1].template.spec.template.metadata.labels[sidecar.istio.io/inject])",
			// istio-opt-out judges the effective pods as before.
		}},
		{"UPDATE adding env to the stored entry", envUpdated, []string{
			"mpiguard-entry spec.runtimePatches[0]: spec.runtimePatches[0] has manager mpiguard.io/admission, which is reserved for mpiguard's own entry, but sets spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[1].template.spec.template.spec.containers",
			"slots-gpus spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[1].template.spec.template.spec.containers[0].env[0]",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := violationsOf(tc.d, "mpiguard-entry", "slots-gpus")
			if len(got) != len(tc.want) {
				t.Fatalf("denials %q, want %d: %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("denial %d:\n got %s\nwant %s...", i, got[i], w)
				}
			}
			if len(tc.want) > 0 && !strings.Contains(got[0], "remove the runtimePatches entry with manager mpiguard.io/admission or give it a manager of your own; mpiguard writes its entry itself") {
				t.Errorf("denial %q does not say how to fix it", got[0])
			}
			if tc.d.Allowed != (len(tc.want) == 0) {
				t.Errorf("allowed %v with denials %v", tc.d.Allowed, tc.d.Denials())
			}
		})
	}
}

// mpiguard leaves an entry under its manager that sets what it never writes
// for the validating pass to deny: replacing it would silently drop what its
// author asked for.
func TestApplyLeavesAForeignEntryAlone(t *testing.T) {
	m := Mutation{RuntimePatch: &trainer.RuntimePatch{Manager: AdmissionManager, TrainingRuntimeSpec: entry(AdmissionManager, withLabel("a", "b")).TrainingRuntimeSpec}}
	foreign := &trainer.TrainJob{Spec: trainer.TrainJobSpec{RuntimePatches: []trainer.RuntimePatch{entry(AdmissionManager, withEnv("X", "1"))}}}
	before := foreign.DeepCopy()
	if m.Apply(foreign) {
		t.Error("Apply changed an entry that sets containers")
	}
	if diff := cmp.Diff(before, foreign); diff != "" {
		t.Errorf("Apply changed the job (-before +after):\n%s", diff)
	}
	stale := &trainer.TrainJob{Spec: trainer.TrainJobSpec{RuntimePatches: []trainer.RuntimePatch{entry(AdmissionManager, withLabel("a", "old"))}}}
	if !m.Apply(stale) || stale.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Metadata.Labels["a"] != "b" {
		t.Errorf("Apply did not replace a stale entry of mpiguard's shape: %+v", stale.Spec.RuntimePatches)
	}
}

// mpiguard's own opt-out label is applied after every other entry and would
// silently override an opt-in of the runtime or of a runtime patch: policies
// judge what was asked for as well as the effective pods, so such a job is
// denied, with the reason and the fix, though its pods would run opted out.
func TestOptInMaskedByMpiguardsLabelIsDenied(t *testing.T) {
	// A runtime patch of the TrainJob's own is the user's to fix; the
	// runtime's template is a cluster admin's, and the denial names it.
	const byPatchMsg = `istio-opt-out spec.runtimePatches: the Worker pods opt in to the Istio mesh (labels sidecar.istio.io/inject="true"); MPI traffic between the Launcher and the Workers breaks behind a sidecar or ambient proxy; remove sidecar.istio.io/inject from the pod template in spec.runtimePatches (or ask a cluster admin to, in ClusterTrainingRuntime "openmpi", if its template sets it); or ask an admin to exempt the namespace`
	const byRuntimeMsg = `istio-opt-out spec.runtimeRef: the Worker pods opt in to the Istio mesh (labels sidecar.istio.io/inject="true"); MPI traffic between the Launcher and the Workers breaks behind a sidecar or ambient proxy; this comes from ClusterTrainingRuntime "mesh" (the TrainJob has no runtime patches of its own): ask a cluster admin to remove sidecar.istio.io/inject from the pod template there, or override it for this TrainJob with spec.runtimePatches; or ask an admin to exempt the namespace`
	f := newAdmissionFlow(t, fixtures.MPIRuntime("openmpi"))
	g := newAdmissionFlow(t, fixtures.MPIRuntime("mesh"))
	g.runtime.Spec.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.Labels = map[string]string{"sidecar.istio.io/inject": "true"}

	byPatch, stored := f.admit(fixtures.TrainJob("team-a", "train", "openmpi").NumNodes(2).
		RuntimePatch(entry("team-a.example.com/mesh", withLabel("sidecar.istio.io/inject", "true"))).Obj(), nil)
	byRuntime, _ := g.admit(fixtures.TrainJob("team-a", "train", "mesh").NumNodes(2).Obj(), nil)
	exempt, _ := f.admit(fixtures.TrainJob("istio-system", "train", "openmpi").NumNodes(2).
		RuntimePatch(entry("team-a.example.com/mesh", withLabel("sidecar.istio.io/inject", "true"))).Obj(), nil)

	// The pods would run opted out: mpiguard's label is the effective one.
	if p := podTemplatePatchOf(stored, "node"); p == nil || p.Metadata.Labels["sidecar.istio.io/inject"] != "false" {
		t.Fatalf("mpiguard's entry does not opt the Workers out: %+v", stored.Spec.RuntimePatches)
	}
	for _, tc := range []struct {
		name string
		d    *Decision
		want []string
	}{
		{"a runtime patch opts the Workers in", byPatch, []string{byPatchMsg}},
		{"the runtime's template opts the Workers in", byRuntime, []string{byRuntimeMsg}},
		{"exempt namespace", exempt, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, violationsOf(tc.d, "istio-opt-out")); diff != "" {
				t.Errorf("istio-opt-out denials (-want +got):\n%s", diff)
			}
		})
	}
}

func podTemplatePatchOf(job *trainer.TrainJob, rj string) *trainer.PodTemplatePatch {
	for _, p := range job.Spec.RuntimePatches {
		if p.Manager != AdmissionManager || p.TrainingRuntimeSpec == nil {
			continue
		}
		for _, r := range p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs {
			if r.Name == rj {
				return r.Template.Spec.Template
			}
		}
	}
	return nil
}

// A pod template change for a replicated job named "" (a runtime's) says so,
// instead of calling metadata.labels a field policies may not mutate.
func TestUnnamedReplicatedJobMutationError(t *testing.T) {
	_, err := buildMutation([]Change{{Policy: "istio-opt-out", Target: "podTemplate", Field: fieldPodLabels, Key: "k", Value: "v"}})
	want := "policy istio-opt-out: cannot change metadata.labels of a pod template without the name of its replicated job (replicatedJob is empty): runtime patches find replicated jobs by name; give every replicated job of the runtime (spec.template.spec.replicatedJobs[].name) a name"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// foreignFields names what an entry sets beyond what mpiguard writes; unset
// (null, empty) fields are not settings.
func TestForeignFields(t *testing.T) {
	rj := func(pod trainer.PodTemplatePatch) *trainer.RuntimePatch {
		p := entry(AdmissionManager, pod)
		return &p
	}
	const pod = "e.trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template"
	for _, tc := range []struct {
		name  string
		entry *trainer.RuntimePatch
		want  []string
	}{
		{"labels", rj(withLabel("a", "b")), nil},
		{"node selector and required affinity", rj(trainer.PodTemplatePatch{Spec: &trainer.PodSpecPatch{
			NodeSelector: map[string]string{"zone": "eu"},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"eu"}}}}},
			}}},
		}}), nil},
		{"empty pod spec", rj(trainer.PodTemplatePatch{Spec: &trainer.PodSpecPatch{}}), nil},
		{"env", rj(withEnv("X", "1")), []string{pod + ".spec.containers"}},
		{"volumes, service account, pod affinity and a name", rj(trainer.PodTemplatePatch{
			Metadata: &metav1.ObjectMeta{Name: "x", Labels: map[string]string{"a": "b"}},
			Spec: &trainer.PodSpecPatch{
				Volumes:            []corev1.Volume{{Name: "v"}},
				ServiceAccountName: new("admin"),
				Affinity: &corev1.Affinity{
					PodAffinity:  &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "k"}}},
					NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}}},
				},
			},
		}), []string{
			pod + ".metadata.name",
			pod + ".spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
			pod + ".spec.affinity.podAffinity",
			pod + ".spec.serviceAccountName",
			pod + ".spec.volumes",
		}},
		{"JobSet-level metadata", &trainer.RuntimePatch{Manager: AdmissionManager, TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{
			Template: &trainer.JobSetTemplatePatch{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}},
		}}, []string{"e.trainingRuntimeSpec.template.metadata"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, input.ForeignFields("e", tc.entry)); diff != "" {
				t.Errorf("ForeignFields (-want +got):\n%s", diff)
			}
		})
	}
}
