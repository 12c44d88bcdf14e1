// Package audit judges what is already in the cluster with today's policies:
// every MPI TrainJob that has not finished goes through the one admission
// pipeline (internal/pipeline, the same Pipeline.Run the webhooks and
// `mpiguard check` call) as the update that would leave it as it is, and
// every (Cluster)TrainingRuntime through the runtime template rules
// (runtimes/template, what the runtime webhook calls). The results are
// published as openreports.io Reports (reports.go) by a controller on the
// elected leader (controller.go); the `mpiguard audit` command calls the same
// functions with a plain client.
//
// judge.go is pure: it turns a stored object into the request the audit
// runs, and what the pipeline or the template rules made of it into results.
package audit

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/jobstate"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reservations"
	"github.com/mpiguard/mpiguard/runtimes/template"
)

// Status is a result's outcome, as openreports.io spells it.
type Status string

const (
	// Pass is the outcome when the policy has nothing against the object.
	Pass Status = "pass"
	// Fail is the outcome when the policy denies it (admission would refuse
	// it today).
	Fail Status = "fail"
	// Warn is the outcome when the policy warns, or is in dryrun.
	Warn Status = "warn"
	// Error is the outcome when the object could not be judged (its runtime
	// is gone, a policy failed): admission would refuse it too.
	Error Status = "error"
)

// Policy names of the results that do not come from a Rego policy.
const (
	// RuntimeTemplatePolicy judges runtimes: runtimes/template, the rules
	// the runtime webhook enforces.
	RuntimeTemplatePolicy = template.Policy
	// EvaluationPolicy names the error result of a TrainJob that could not
	// be judged at all: no policy of the set could say anything about it.
	EvaluationPolicy = "mpiguard"
)

// Result is what one policy says about one object.
type Result struct {
	// Object is the TrainJob or runtime judged.
	Object corev1.ObjectReference
	Policy string
	Status Status
	// Message is what a user would read at admission: each violation as
	// "field: message" (pipeline.ViolationLine without the "[policy]"
	// prefix), several joined with "; ". Empty for a pass.
	Message string
	// Field lists the fields to change, comma separated.
	Field string
	// PolicySetVersion is the version of the policy set that judged it
	// (empty for runtimes, which no Rego policy judges).
	PolicySetVersion string
	// Enforcement is "dryrun" for the warn result of a dryrun policy.
	Enforcement engine.Enforcement
}

// Violates says whether the result is a violation: a policy that denies.
func (r Result) Violates() bool { return r.Status == Fail }

// Running says whether a stored TrainJob runs: it is not suspended and its
// pods exist (existing counts them, reservations.ExistingPods) or it has
// started (the JobSet reports jobs). Everything else that has not finished
// waits for pods, and is judged as the resume that would start it.
func Running(job *trainer.TrainJob, existing reservations.Existing) bool {
	if jobstate.Suspended(job) {
		return false
	}
	if len(existing.Of(job.Name, job.UID)) > 0 {
		return true
	}
	for _, s := range job.Status.JobsStatus {
		if ptr.Deref(s.Active, 0)+ptr.Deref(s.Ready, 0)+ptr.Deref(s.Succeeded, 0)+ptr.Deref(s.Failed, 0) > 0 {
			return true
		}
	}
	return false
}

// Request is the request audit runs for a stored TrainJob, nil for a job that
// is not audited (finished, or being deleted). It asks "what do today's
// policies say about this job as it is stored": an UPDATE that leaves it as
// it is (Audit: judged although nothing changes), judged at stage Validate
// (the stored job carries mpiguard's runtime-patch entry; nothing is
// mutated). A job that waits for pods is judged as its resume, old suspended
// and new not: would it fit if it started now. The decision log is for
// admissions: RecordLater, and audit never records.
func Request(job *trainer.TrainJob, running bool) *pipeline.Request {
	if jobstate.Finished(job) || !job.DeletionTimestamp.IsZero() {
		return nil
	}
	req := &pipeline.Request{Operation: engine.Update, TrainJob: job, OldTrainJob: job, Audit: true, RecordLater: true}
	if !running {
		req.OldTrainJob, req.TrainJob = jobstate.AsResume(job)
	}
	return req
}

// JobResults turns what the pipeline made of a TrainJob's request into one
// result per policy of the set: the policies without a violation pass. An
// ungoverned job (not MPI) has no results; an error is one error result.
func JobResults(job *trainer.TrainJob, policies []string, v *pipeline.Evaluation, err error) []Result {
	ref := TrainJobRef(job)
	if err != nil {
		return []Result{{Object: ref, Policy: EvaluationPolicy, Status: Error, Message: err.Error()}}
	}
	if v == nil || !v.Governed || v.Decision == nil {
		return nil
	}
	byPolicy := map[string][]engine.Violation{}
	for _, x := range v.Decision.Violations {
		byPolicy[x.Policy] = append(byPolicy[x.Policy], x)
	}
	names := slices.Clone(policies)
	for p := range byPolicy {
		if !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	out := make([]Result, 0, len(names))
	for _, p := range names {
		r := Result{Object: ref, Policy: p, Status: Pass, PolicySetVersion: v.Decision.PolicySetVersion}
		vs := byPolicy[p]
		if len(vs) > 0 {
			r.Status, r.Enforcement = statusOf(vs)
			r.Message, r.Field = describe(vs)
		}
		out = append(out, r)
	}
	return out
}

// statusOf is the outcome of a policy's violations: fail when one denies,
// else warn (a warning, or a dryrun policy, which only logs at admission).
func statusOf(vs []engine.Violation) (Status, engine.Enforcement) {
	dryrun := true
	for _, x := range vs {
		if x.Action == engine.EnforceDeny {
			return Fail, ""
		}
		dryrun = dryrun && x.Action == engine.EnforceDryRun
	}
	if dryrun {
		return Warn, engine.EnforceDryRun
	}
	return Warn, ""
}

// describe joins the violations' lines as admission shows them, without the
// policy prefix (the result names the policy), and their fields.
func describe(vs []engine.Violation) (message, fields string) {
	var lines, fs []string
	for _, x := range vs {
		line := strings.TrimPrefix(pipeline.ViolationLine(x), "["+x.Policy+"] ")
		lines = append(lines, line)
		if x.Field != "" && !slices.Contains(fs, x.Field) {
			fs = append(fs, x.Field)
		}
	}
	return strings.Join(lines, "; "), strings.Join(fs, ", ")
}

// RuntimeResults judges a (Cluster)TrainingRuntime with the rules the runtime
// webhook enforces: one result, fail when the webhook would deny it (each
// problem as "field: detail"), warn when it would only warn, else pass.
func RuntimeResults(ref corev1.ObjectReference, meta *metav1.ObjectMeta, spec *trainer.TrainingRuntimeSpec) []Result {
	errs, warnings := template.Validate(meta, spec)
	r := Result{Object: ref, Policy: RuntimeTemplatePolicy, Status: Pass}
	switch {
	case len(errs) > 0:
		r.Status = Fail
		r.Message, r.Field = fieldErrors(errs)
	case len(warnings) > 0:
		r.Status = Warn
		r.Message, r.Field = fieldErrors(warnings)
	}
	return []Result{r}
}

// fieldErrors reads as the runtime webhook's denial and warnings do.
func fieldErrors(errs field.ErrorList) (message, fields string) {
	var lines, fs []string
	for _, e := range errs {
		lines = append(lines, fmt.Sprintf("%s: %s", e.Field, e.Detail))
		if !slices.Contains(fs, e.Field) {
			fs = append(fs, e.Field)
		}
	}
	return strings.Join(lines, "; "), strings.Join(fs, ", ")
}

// TrainJobRef is the reference a report gives of a TrainJob.
func TrainJobRef(job *trainer.TrainJob) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind, Namespace: job.Namespace, Name: job.Name, UID: job.UID}
}

// ClusterRuntimeRef and RuntimeRef are the references of runtimes.
func ClusterRuntimeRef(rt *trainer.ClusterTrainingRuntime) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: trainer.GroupVersion.String(), Kind: trainer.ClusterTrainingRuntimeKind, Name: rt.Name, UID: rt.UID}
}

// RuntimeRef is the reference a Report's scope gives a TrainingRuntime.
func RuntimeRef(rt *trainer.TrainingRuntime) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainingRuntimeKind, Namespace: rt.Namespace, Name: rt.Name, UID: rt.UID}
}
