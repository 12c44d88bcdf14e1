package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	reports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/policies/audit"
	quotav1alpha1 "github.com/mpiguard/mpiguard/policies/quota/api/v1alpha1"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// runDemo shows each part of mpiguard at work on the local control plane.
func runDemo(ctx context.Context, env *framework.Env) error {
	for _, step := range demoSteps {
		if err := step(ctx, env); err != nil {
			return err
		}
	}
	return nil
}

// demoSteps run in order; each part of mpiguard adds its own step.
var demoSteps = []func(context.Context, *framework.Env) error{
	showRuntimes,
	showAdmission,
	showReservation,
	showNetworkPolicy,
	showAudit,
}

// showRuntimes lists the ClusterTrainingRuntimes once the publisher has applied them.
func showRuntimes(ctx context.Context, env *framework.Env) error {
	var list trainer.ClusterTrainingRuntimeList
	seen := -1
	// Done once the count is non-zero and stopped growing between two polls.
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.List(ctx, &list); err != nil {
			return false, err
		}
		done := len(list.Items) > 0 && len(list.Items) == seen
		seen = len(list.Items)
		return done, nil
	})
	say("curated ClusterTrainingRuntimes published by mpiguard: %d", len(list.Items))
	for _, rt := range list.Items {
		fmt.Printf("    %-40s %s\n", rt.Name, rt.Labels["mpiguard.io/mpi-implementation"])
	}
	return nil
}

// demoRuntime is the sample runtime: OpenMPI, Workers with 4 GPUs each.
const demoRuntime = "demo-openmpi-4gpu"

// showAdmission creates sample namespaces, a quota and a runtime, submits
// sample TrainJobs through the apiserver and prints each decision.
func showAdmission(ctx context.Context, env *framework.Env) error {
	teamA := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	teamEU := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-eu", Labels: map[string]string{"mpiguard.io/data-residency": "eu"}}}
	rt := fixtures.MPIRuntime(demoRuntime).
		Resources("node", fixtures.ResourceList("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "4"), fixtures.ResourceList("nvidia.com/gpu", "4")).
		Resources("launcher", fixtures.ResourceList("cpu", "1", "memory", "2Gi"), nil).
		Cluster()
	cpuOnly := fixtures.MPIRuntime("demo-openmpi-cpu").
		Resources("node", fixtures.ResourceList("cpu", "2", "memory", "4Gi"), nil).
		Resources("launcher", fixtures.ResourceList("cpu", "1", "memory", "1Gi"), nil).
		Cluster()
	torch := fixtures.TorchRuntime("demo-torch").Cluster()
	for _, obj := range []client.Object{teamA, teamEU, rt, cpuOnly, torch} {
		if err := env.Client.Create(ctx, obj); err != nil {
			return err
		}
	}
	quota := fixtures.ResourceQuota("team-a", "team-a", "requests.nvidia.com/gpu", "16", "requests.cpu", "64")
	if err := env.Client.Create(ctx, quota); err != nil {
		return err
	}
	// Play the quota controller (the local control plane runs none).
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: fixtures.ResourceList("requests.nvidia.com/gpu", "0", "requests.cpu", "0")}
	if err := env.Client.Status().Update(ctx, quota); err != nil {
		return err
	}
	time.Sleep(time.Second) // let mpiguard's cache see the quota's status

	say("sample objects: namespace team-a (ResourceQuota: 16 GPUs, 64 CPUs), namespace team-eu (data residency eu),")
	say("                runtime %s (1 Launcher + Workers with 4 GPUs each), runtime demo-torch (not MPI)", demoRuntime)
	say("submitting sample TrainJobs; each decision as the apiserver returns it:")
	warns := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = warns
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		return err
	}
	for _, s := range []struct {
		what string
		job  *trainer.TrainJob
	}{
		{"2 Workers x 4 GPUs, fits the quota", fixtures.TrainJob("team-a", "resnet-2x4", demoRuntime).NumNodes(2).Obj()},
		{"3 more Workers x 4 GPUs: the whole job no longer fits", fixtures.TrainJob("team-a", "bert-3x4", demoRuntime).NumNodes(3).Obj()},
		{"2 Slots per worker on 4-GPU Workers", fixtures.TrainJob("team-a", "half-slots", demoRuntime).NumNodes(1).NumProcPerNode(2).Obj()},
		{"asks to run for 30 days", fixtures.TrainJob("team-a", "forever", demoRuntime).NumNodes(1).ActiveDeadlineSeconds(30 * 24 * 3600).Obj()},
		{"in a namespace bound to the eu zone", fixtures.TrainJob("team-eu", "eu-train", demoRuntime).NumNodes(1).Obj()},
		{"pins its Workers to us-east-1 from the eu namespace", fixtures.TrainJob("team-eu", "us-pinned", demoRuntime).NumNodes(1).RuntimePatch(regionPatch("us-east-1")).Obj()},
		{"8 Slots per worker on 2-CPU Workers (a warning, not a denial)", fixtures.TrainJob("team-a", "cpu-oversubscribed", "demo-openmpi-cpu").NumNodes(2).NumProcPerNode(8).Obj()},
		{"a non-MPI TrainJob", fixtures.TrainJob("team-a", "torch-job", "demo-torch").NumNodes(4).Obj()},
	} {
		fmt.Printf("\n  %s/%s — %s\n", s.job.Namespace, s.job.Name, s.what)
		submitted := s.job.DeepCopy() // Create overwrites s.job with what the apiserver stored
		err := c.Create(ctx, s.job)
		if err != nil {
			fmt.Printf("    DENIED\n%s\n", indent(strings.TrimPrefix(err.Error(), "admission webhook \"vtrainjob.mpiguard.io\" denied the request: "), "      "))
			continue
		}
		fmt.Printf("    ALLOWED\n")
		for _, w := range warns.take() {
			fmt.Printf("      warning: %s\n", w)
		}
		printMutations(ctx, env, submitted)
	}
	fmt.Println()
	return nil
}

func printMutations(ctx context.Context, env *framework.Env, job *trainer.TrainJob) {
	var stored trainer.TrainJob
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &stored); err != nil {
		fmt.Printf("      (cannot read it back: %v)\n", err)
		return
	}
	if stored.Spec.ActiveDeadlineSeconds != 0 && job.Spec.ActiveDeadlineSeconds == 0 {
		fmt.Printf("      mutation: spec.activeDeadlineSeconds = %d (%d hours)\n", stored.Spec.ActiveDeadlineSeconds, stored.Spec.ActiveDeadlineSeconds/3600)
	}
	for _, p := range stored.Spec.RuntimePatches {
		if p.Manager != "mpiguard.io/admission" {
			continue
		}
		out, _ := yaml.Marshal(p.TrainingRuntimeSpec)
		fmt.Printf("      mutation: spec.runtimePatches[manager=%s].trainingRuntimeSpec =\n%s", p.Manager, indent(string(out), "        "))
	}
}

func regionPatch(region string) trainer.RuntimePatch {
	return trainer.RuntimePatch{
		Manager: "example.com/user",
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
			Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
				Name: "node",
				Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
					Spec: &trainer.PodSpecPatch{NodeSelector: map[string]string{"topology.kubernetes.io/region": region}},
				}}},
			}}},
		}},
	}
}

// showReservation prints the QuotaReservation that holds team-a's quota for
// the admitted sample job: its pods do not exist yet (the local control plane
// runs no JobSet controller), so the quota does not count them, the
// reservation does.
func showReservation(ctx context.Context, env *framework.Env) error {
	var res quotav1alpha1.QuotaReservation
	key := client.ObjectKey{Namespace: env.PolicyNamespace, Name: "team-a"}
	if err := env.Client.Get(ctx, key, &res); err != nil {
		say("no QuotaReservation for team-a: %v", err)
		return nil
	}
	res.ManagedFields = nil
	res.SetGroupVersionKind(quotav1alpha1.GroupVersion.WithKind("QuotaReservation")) // typed reads leave it empty
	out, _ := yaml.Marshal(res)
	say("QuotaReservation %s (kubectl get quotareservations -n %s): what admitted TrainJobs hold until their pods exist:\n%s",
		key, env.PolicyNamespace, indent(string(out), "    "))
	return nil
}

// showNetworkPolicy prints the NetworkPolicy mpiguard created for a sample MPI TrainJob.
func showNetworkPolicy(ctx context.Context, env *framework.Env) error {
	var np networkingv1.NetworkPolicy
	key := client.ObjectKey{Namespace: "team-a", Name: "resnet-2x4"}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		return env.Client.Get(ctx, key, &np) == nil, nil
	})
	if err != nil {
		say("no NetworkPolicy for %s appeared within 15s", key)
		return nil
	}
	np.ManagedFields = nil
	out, _ := yaml.Marshal(np)
	say("NetworkPolicy mpiguard created for MPI TrainJob %s:\n%s", key, indent(string(out), "    "))
	return nil
}

// showAudit tightens a policy at run time, as a compliance team would, and
// prints the team-a Report the audit publishes: the stored job that now
// breaks it, with the message admission would give.
func showAudit(ctx context.Context, env *framework.Env) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: fixtures.MaxWorkersPolicyName, Labels: map[string]string{"mpiguard.io/policy": "rego"}},
		Data:       map[string]string{"max_workers.rego": fixtures.MaxWorkersPolicy(1)},
	}
	if err := env.Client.Create(ctx, cm); err != nil {
		return err
	}
	say("policy tightened at run time: ConfigMap %s/%s (label mpiguard.io/policy=rego) allows at most 1 Worker per TrainJob", cm.Namespace, cm.Name)
	var r reports.Report
	key := client.ObjectKey{Namespace: "team-a", Name: audit.ReportName}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, key, &r); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, res := range r.Results {
			if res.Policy == fixtures.MaxWorkersPolicyName {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		say("the audit did not report on the new policy within 60s: %v", err)
		return nil
	}
	say("the audit re-judged what is stored; Report %s (kubectl get reports -n team-a), violations and warnings:", key)
	fmt.Printf("    %-28s %-24s %-6s %s\n", "OBJECT", "POLICY", "RESULT", "MESSAGE")
	for _, res := range r.Results {
		if res.Result == reports.Result(audit.Pass) || len(res.Subjects) == 0 {
			continue
		}
		fmt.Printf("    %-28s %-24s %-6s %s\n", res.Subjects[0].Kind+"/"+res.Subjects[0].Name, res.Policy, res.Result, res.Description)
	}
	fmt.Printf("    summary: %d pass, %d fail, %d warn, %d error\n", r.Summary.Pass, r.Summary.Fail, r.Summary.Warn, r.Summary.Error)
	return nil
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// warnings collects the admission warnings the apiserver returns to the client.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}
