package engine

import (
	"context"
	"strings"
	"sync"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/runtimes/constraints"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// FuzzDecide runs full admission decisions with the embedded policies, as
// `mpiguard check` and the webhooks make them: render, mutating pass, apply,
// render again, validating pass. The knobs are what users and admins set: the
// job's size, resources, deadline, suspension and env, a runtime patch's node
// selector and pod label, a ResourceQuota's hard and used amounts and a job
// already holding quota, the namespace's residency label and max-duration
// annotation, and the runtime's constraint annotations. For every input the
// apiserver accepts (and that renders):
//   - no panic and no evaluation error: every policy is total, and an error
//     would reject a valid job with no reason it can act on;
//   - the mutation converges: mutating the mutated job changes nothing (the
//     webhook is reinvoked with it);
//   - the decision is consistent: denied exactly when a violation denies,
//     and every violation names its policy and says something.
func FuzzDecide(f *testing.F) {
	f.Add(int32(2), int32(4), "8", "4", false, int64(0), false, false, "16", "12", "50", false, "", "", "", "", "", "", "NCCL_DEBUG", "", "")
	f.Add(int32(3), int32(1), "500m", "", true, int64(3600), false, true, "", "", "", true, "eu", "48", "2", "4", "pool=gpu", "team-*", "OMPI_MCA_plm_rsh_args", "eu-west-1", "true")
	f.Add(int32(0), int32(0), "0", "0", false, int64(1<<40), true, false, "0", "0", "0", true, "us", "0.5", "eight", "-1", "bad key!=x", "[", "", "us-east-1", "false")
	f.Add(int32(render.MaxNumNodes), int32(8), "1E", "1k", true, int64(1), false, true, "1P", "999999999999999999999", "100000", true, "mars", "1e3", "1", "0", "nvidia.com/gpu.present", "team-a", "X", "ap-south-1", "")
	f.Add(int32(-1), int32(2), "1m", "2", false, int64(0), false, false, "2", "3", "1", false, "eu", "99999999999999999999999.9", " 8 ", " 4 ", ",,", "team-a,ml-*", "A", "eu-central-1", "ambient")
	f.Fuzz(func(t *testing.T, nodes, procs int32, cpu, gpus string, launcherIsNode bool,
		deadline int64, suspend, update bool, hardGPU, usedGPU, hardPods string, reserve bool,
		zone, maxHours, maxWorkers, maxGPUs, requiredLabels, allowedNamespaces, envName, region, inject string) {
		if deadline < 0 || (zone != "" && len(validation.IsValidLabelValue(zone)) > 0) {
			return // the apiserver refuses the TrainJob or the Namespace label
		}
		perNode, ok := quantityList(map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, "nvidia.com/gpu": gpus}, false)
		if !ok {
			return
		}
		hard, ok := quantityList(map[corev1.ResourceName]string{"requests.nvidia.com/gpu": hardGPU, corev1.ResourcePods: hardPods}, true)
		if !ok {
			return
		}
		used, ok := quantityList(map[corev1.ResourceName]string{"requests.nvidia.com/gpu": usedGPU}, true)
		if !ok {
			return
		}

		rb := fixtures.MPIRuntime("openmpi").RunLauncherAsNode(launcherIsNode).
			Resources("launcher", fixtures.ResourceList("cpu", "1", "memory", "1Gi"), nil)
		for key, value := range map[string]string{
			constraints.AnnotationMaxWorkers: maxWorkers, constraints.AnnotationMaxGPUsPerWorker: maxGPUs,
			constraints.AnnotationRequiredNodeLabels: requiredLabels, constraints.AnnotationAllowedNamespaces: allowedNamespaces,
		} {
			if value != "" {
				rb.Annotation(key, value)
			}
		}
		rt := rb.Cluster()

		jb := fixtures.TrainJob("team-a", "job", "openmpi").NumNodes(nodes).NumProcPerNode(procs).Suspend(suspend).ActiveDeadlineSeconds(deadline)
		if envName != "" {
			jb.Env(envName, "1")
		}
		if region != "" || inject != "" {
			jb.RuntimePatch(podPatch("example.com/placer", region, inject))
		}
		tj := jb.Obj()
		limits := corev1.ResourceList{}
		if q, ok := perNode["nvidia.com/gpu"]; ok {
			limits["nvidia.com/gpu"] = q
		}
		tj.Spec.Trainer.ResourcesPerNode = &corev1.ResourceRequirements{Requests: perNode, Limits: limits}

		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
		if zone != "" {
			ns.Labels = map[string]string{"mpiguard.io/data-residency": zone}
		}
		if maxHours != "" {
			ns.Annotations = map[string]string{"mpiguard.io/max-duration-hours": maxHours}
		}
		var quotas []corev1.ResourceQuota
		if len(hard) > 0 {
			q := fixtures.ResourceQuota("team-a", "team-a")
			q.Spec.Hard, q.Status.Hard, q.Status.Used = hard, hard, used
			quotas = append(quotas, *q)
		}

		if err := render.ApplyDefaults(tj, rt); err != nil {
			t.Fatalf("ApplyDefaults: %v", err)
		}
		e, r := fuzzEngine(t)
		ctx := context.Background()
		// As the webhook renders (admitter.go): mpiguard's own patch is not
		// counted as requested by the user.
		in := render.Input{TrainJob: tj, Runtime: rt, OwnManager: AdmissionManager}
		view, err := r.Render(ctx, in)
		if err != nil {
			return // not renderable: the webhooks refuse it with the renderer's reason
		}
		req := &input.Source{
			Operation: Create, User: "alice", Groups: []string{"ml"},
			TrainJob: tj, View: view, Namespace: ns, Quotas: quotas,
			Runtime: input.RuntimeMeta{Kind: trainer.ClusterTrainingRuntimeKind, Name: rt.Name, Labels: rt.Labels, Annotations: rt.Annotations},
		}
		if reserve {
			req.Reservations = []quota.Reservation{{TrainJob: "team-a/earlier", Parts: quota.PartsOf(view)}}
		}
		if update {
			// Kueue resumes a job created suspended: an UPDATE of spec.suspend.
			req.Operation = Update
			req.OldTrainJob = tj.DeepCopy()
			req.OldTrainJob.Spec.Suspend = ptr.To(true)
		}

		m, err := e.Mutations(ctx, request(req))
		if err != nil {
			t.Fatalf("mutating pass: %v", err)
		}
		if m.Apply(tj) {
			if req.View, err = r.Render(ctx, in); err != nil {
				t.Fatalf("the job no longer renders after mpiguard's mutations %v: %v", m.Changes, err)
			}
			again, err := e.Mutations(ctx, request(req))
			if err != nil {
				t.Fatalf("mutating pass on the mutated job: %v", err)
			}
			if mutated := tj.DeepCopy(); again.Apply(mutated) {
				t.Fatalf("the mutation does not converge: mutating the mutated job changes it again (%v after %v)", again.Changes, m.Changes)
			}
		}
		d, err := e.Decide(ctx, request(req))
		if err != nil {
			t.Fatalf("validating pass: %v", err)
		}
		if !d.Governed {
			t.Fatal("an MPI job is not governed")
		}
		if d.Allowed != (len(d.Denials()) == 0) {
			t.Fatalf("allowed %t with denials %v", d.Allowed, d.Denials())
		}
		for _, v := range d.Violations {
			if v.Policy == "" || v.Message == "" {
				t.Fatalf("violation without a policy or message: %+v", v)
			}
		}
	})
}

var fuzzSetup struct {
	once     sync.Once
	engine   *Engine
	renderer *render.Renderer
	err      error
}

// fuzzEngine is the engine with the embedded policies and a renderer, built
// once per process.
func fuzzEngine(t *testing.T) (*Engine, *render.Renderer) {
	fuzzSetup.once.Do(func() {
		ctx := context.Background()
		if fuzzSetup.engine, fuzzSetup.err = NewDefault(ctx, Options{}); fuzzSetup.err == nil {
			fuzzSetup.renderer, fuzzSetup.err = render.NewRenderer(ctx)
		}
	})
	if fuzzSetup.err != nil {
		t.Fatal(fuzzSetup.err)
	}
	return fuzzSetup.engine, fuzzSetup.renderer
}

// quantityList parses the non-empty values; ok is false when one is not a
// quantity, or, for a ResourceQuota (quota true), is negative or, but for
// CPU and memory, not a whole number: the apiserver refuses those.
func quantityList(values map[corev1.ResourceName]string, quota bool) (corev1.ResourceList, bool) {
	out := corev1.ResourceList{}
	for name, v := range values {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, false
		}
		if quota {
			d := q.AsDec()
			whole := new(inf.Dec).Round(d, 0, inf.RoundDown).Cmp(d) == 0
			if q.Sign() < 0 || (!whole && name != corev1.ResourceCPU && name != corev1.ResourceMemory) {
				return nil, false
			}
		}
		out[name] = q
	}
	return out, true
}

// podPatch is a runtime patch pinning every pod to a region and setting the
// Istio injection label, as a placement controller or a user would write it.
func podPatch(manager, region, inject string) trainer.RuntimePatch {
	spec := &trainer.PodSpecPatch{}
	if region != "" {
		spec.NodeSelector = map[string]string{"topology.kubernetes.io/region": region}
	}
	var meta *metav1.ObjectMeta
	if inject != "" {
		meta = &metav1.ObjectMeta{Labels: map[string]string{"sidecar.istio.io/inject": inject}}
	}
	var jobs []trainer.ReplicatedJobPatch
	for _, name := range []string{"launcher", "node"} {
		jobs = append(jobs, trainer.ReplicatedJobPatch{Name: name, Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{
			Template: &trainer.PodTemplatePatch{Metadata: meta, Spec: spec},
		}}})
	}
	return trainer.RuntimePatch{Manager: manager, TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{
		Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: jobs}},
	}}
}

// FuzzDecideRandomRequest decides randomly filled requests (every field of the
// TrainJob, its rendered view, the namespace, quotas with any scopes, jobs
// holding quota, runtime metadata) with the embedded policies: shapes the
// renderer never produces, to reach the input builder's and the quota
// arithmetic's corners. No panic, and no evaluation error.
func FuzzDecideRandomRequest(f *testing.F) {
	for seed := range int64(8) {
		f.Add(seed, seed%2 == 0)
	}
	f.Fuzz(func(t *testing.T, seed int64, update bool) {
		req := &input.Source{}
		fixtures.RandomFiller(seed).Funcs(
			func(e *field.Error, c randfill.Continue) {
				*e = field.Error{Type: field.ErrorTypeInvalid, Field: c.String(20), BadValue: c.String(10), Detail: c.String(30)}
			},
		).Fill(req)
		req.Operation = Create
		if update {
			req.Operation = Update
		}
		if req.TrainJob == nil {
			req.TrainJob = &trainer.TrainJob{}
		}
		if req.OldTrainJob == nil {
			req.OldTrainJob = req.TrainJob.DeepCopy()
		}
		if req.View == nil {
			req.View = &render.JobView{}
		}
		req.View.MPI = true
		e, _ := fuzzEngine(t)
		doc, err := input.New(req)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, mutationOnly := range []bool{true, false} {
			_, err := e.Decide(context.Background(), &Request{Input: doc, MutationOnly: mutationOnly, RecordLater: true})
			if err != nil && unnamedReplicatedJob(req.View) && strings.Contains(err.Error(), "replicatedJob is empty") {
				// Known (docs/reliability.md): a replicated job named ""
				// (the runtime CRD allows it; JobSet refuses it) cannot be
				// patched, and the engine says so and how to fix it.
				continue
			}
			if err != nil {
				t.Fatalf("seed %d (mutation pass %t): %v", seed, mutationOnly, err)
			}
		}
	})
}

func unnamedReplicatedJob(v *render.JobView) bool {
	for _, rj := range v.ReplicatedJobs {
		if rj.Name == "" {
			return true
		}
	}
	return false
}
