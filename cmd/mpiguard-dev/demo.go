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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/internal/audit"
	"github.com/mpiguard/mpiguard/internal/devcluster"
	"github.com/mpiguard/mpiguard/networkpolicies"
	"github.com/mpiguard/mpiguard/networkpolicies/verdict"
)

// demo is what the steps share: the cluster, and a client that collects
// the admission warnings the apiserver returns.
type demo struct {
	env      *devcluster.Env
	client   client.Client
	warnings *warnings
}

// runDemo shows each part of mpiguard at work on the local cluster.
func runDemo(ctx context.Context, env *devcluster.Env) error {
	d := &demo{env: env, warnings: &warnings{}}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = d.warnings
	var err error
	if d.client, err = client.New(cfg, client.Options{Scheme: env.Client.Scheme()}); err != nil {
		return err
	}
	for _, step := range demoSteps {
		if err := step(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// demoSteps run in order; each part of mpiguard adds its own step.
var demoSteps = []func(context.Context, *demo) error{
	showRuntimes,
	showQuotaLoop,
	showSubmissions,
	showNetworkPolicy,
	showAudit,
}

// showRuntimes lists the ClusterTrainingRuntimes once the publisher has applied them.
func showRuntimes(ctx context.Context, d *demo) error {
	env := d.env
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

// showSubmissions submits the sample TrainJobs of team-b and team-eu and
// prints each decision: policies that judge the job itself, not the quota.
func showSubmissions(ctx context.Context, d *demo) error {
	say("more sample TrainJobs, one decision each (namespace team-b has no quota; team-eu is bound to the eu zone):")
	for _, s := range []struct{ name, what string }{
		{"half-slots", "2 Slots per worker on 4-GPU Workers"},
		{"forever", "asks to run for 30 days"},
		{"eu-train", "in a namespace bound to the eu zone"},
		{"us-pinned", "pins its Workers to us-east-1 from the eu namespace"},
		{"cpu-oversubscribed", "8 Slots per worker on 2-CPU Workers (a warning, not a denial)"},
		{"torch-job", "a non-MPI TrainJob"},
	} {
		if _, err := d.submit(ctx, s.name, s.what, true); err != nil {
			return err
		}
	}
	fmt.Println()
	return nil
}

// submit creates the sample TrainJob name through the apiserver and prints
// the decision as it returns it, with warnings and, if mutations, mpiguard's
// mutations.
func (d *demo) submit(ctx context.Context, name, what string, mutations bool) (allowed bool, err error) {
	job, err := sampleJob(name)
	if err != nil {
		return false, err
	}
	fmt.Printf("\n  %s/%s — %s\n", job.Namespace, job.Name, what)
	submitted := job.DeepCopy() // Create overwrites job with what the apiserver stored
	if err := d.client.Create(ctx, job); err != nil {
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			return false, err
		}
		fmt.Printf("    DENIED\n%s\n", indent(strings.TrimPrefix(err.Error(), "admission webhook \"vtrainjob.mpiguard.io\" denied the request: "), "      "))
		return false, nil
	}
	fmt.Printf("    ALLOWED\n")
	for _, w := range d.warnings.take() {
		fmt.Printf("      warning: %s\n", w)
	}
	if mutations {
		printMutations(ctx, d.env, submitted)
	}
	return true, nil
}

func printMutations(ctx context.Context, env *devcluster.Env, job *trainer.TrainJob) {
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

// showNetworkPolicy prints the NetworkPolicy mpiguard created for a sample MPI
// TrainJob and the verdict of cyclonus's NetworkPolicy matcher on a Worker
// reaching an S3 address: allowed by the default template, refused once the
// namespace asks for the strict one.
func showNetworkPolicy(ctx context.Context, d *demo) error {
	key := client.ObjectKey{Namespace: "team-a", Name: "bert-3x4"}
	np, ok := d.policy(ctx, key, "")
	if !ok {
		say("no NetworkPolicy for %s appeared within 15s", key)
		return nil
	}
	np.ManagedFields = nil
	out, _ := yaml.Marshal(np)
	say("NetworkPolicy mpiguard created for MPI TrainJob %s:\n%s", key, indent(string(out), "    "))
	worker := verdict.Pod(key.Namespace, map[string]string{jobsetv1alpha2.JobSetNameKey: key.Name, jobsetv1alpha2.ReplicatedJobNameKey: "node"}, "10.244.0.11")
	s3 := verdict.Connection{From: worker, To: verdict.External(demoS3Address), Port: 443, Protocol: corev1.ProtocolTCP}
	fmt.Printf("    a Worker → S3 %s:443, under template %s: %s\n", demoS3Address, np.Labels[networkpolicies.TemplateLabel],
		verdict.Judge([]*networkingv1.NetworkPolicy{np}, s3))

	if err := d.annotateNamespace(ctx, key.Namespace, string(networkpolicies.TemplateJobIsolated)); err != nil {
		return err
	}
	defer func() { _ = d.annotateNamespace(ctx, key.Namespace, "") }()
	if np, ok = d.policy(ctx, key, networkpolicies.TemplateJobIsolated); !ok {
		say("the policy of %s did not switch to %s within 15s", key, networkpolicies.TemplateJobIsolated)
		return nil
	}
	fmt.Printf("    namespace %s annotated %s=%s; the same connection under template %s: %s\n\n", key.Namespace,
		networkpolicies.AnnotationTemplate, networkpolicies.TemplateJobIsolated, np.Labels[networkpolicies.TemplateLabel],
		verdict.Judge([]*networkingv1.NetworkPolicy{np}, s3))
	return nil
}

// demoS3Address is an address of Amazon S3 (us-east-1), outside the cluster.
const demoS3Address = "52.216.8.10"

// policy waits up to 15s for the NetworkPolicy key, written with template
// (any template when empty).
func (d *demo) policy(ctx context.Context, key client.ObjectKey, template networkpolicies.Template) (*networkingv1.NetworkPolicy, bool) {
	var np networkingv1.NetworkPolicy
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		if d.env.Client.Get(ctx, key, &np) != nil {
			return false, nil
		}
		return template == "" || np.Labels[networkpolicies.TemplateLabel] == string(template), nil
	})
	return &np, err == nil
}

// annotateNamespace sets the namespace's template annotation, or removes it
// when template is empty.
func (d *demo) annotateNamespace(ctx context.Context, name, template string) error {
	var ns corev1.Namespace
	if err := d.env.Client.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
		return err
	}
	patch := client.MergeFrom(ns.DeepCopy())
	if template == "" {
		delete(ns.Annotations, networkpolicies.AnnotationTemplate)
	} else {
		if ns.Annotations == nil {
			ns.Annotations = map[string]string{}
		}
		ns.Annotations[networkpolicies.AnnotationTemplate] = template
	}
	return d.env.Client.Patch(ctx, &ns, patch)
}

// maxWorkersPolicyName is samples/policy.yaml's policy: its Rego package's
// name, as decisions, reports and metrics name the policy.
const maxWorkersPolicyName = "compliance-max-workers"

// showAudit tightens a policy at run time, as a compliance team would, and
// prints the team-a Report the audit publishes: the stored job that now
// breaks it, with the message admission would give.
func showAudit(ctx context.Context, d *demo) error {
	env := d.env
	objs, err := readSamples("policy.yaml")
	if err != nil {
		return err
	}
	cm := objs[0]
	cm.SetNamespace(env.PolicyNamespace)
	if err := env.Client.Create(ctx, cm); err != nil {
		return err
	}
	say("policy tightened at run time: ConfigMap %s/%s (label mpiguard.io/policy=rego) allows at most 1 Worker per TrainJob", cm.GetNamespace(), cm.GetName())
	var r reports.Report
	key := client.ObjectKey{Namespace: "team-a", Name: audit.ReportName}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, key, &r); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, res := range r.Results {
			if res.Policy == maxWorkersPolicyName {
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
