package engine

import (
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/input"
)

// Operation is the admission operation being decided (internal/input).
type Operation = input.Operation

// The admission operations, as internal/input names them.
const (
	Create = input.Create
	Update = input.Update
)

// Request is one evaluation of a job's input document. The engine reads it
// and never modifies it.
type Request struct {
	// Input is the job's policy input document (internal/input), built once
	// per job by the caller; what it was built from (Input.Source()) names
	// the job in the decision log and exemptions.
	Input *input.Document
	// MutationOnly marks the mutating webhook's pass: it is evaluated for its
	// mutations only and is neither logged nor counted, so each admission shows
	// up once in the decision log and metrics (the validating pass).
	MutationOnly bool
	// RecordLater leaves the decision out of the log and metrics: the caller
	// calls Engine.Record with the final decision (see Engine.Record).
	RecordLater bool
}

// Enforcement says what a policy's violations do.
type Enforcement string

const (
	// EnforceDeny rejects the request (a policy's warn rules still only warn).
	EnforceDeny Enforcement = "deny"
	// EnforceWarn returns violations as admission warnings and allows.
	EnforceWarn Enforcement = "warn"
	// EnforceDryRun only logs violations and mutations; nothing is changed.
	EnforceDryRun Enforcement = "dryrun"
)

// Violation is one thing a policy found wrong.
type Violation struct {
	Policy string `json:"policy"`
	// Action is what the violation does after enforcement: deny, warn or dryrun.
	Action Enforcement `json:"action"`
	// Field is the TrainJob field path to change, e.g. spec.trainer.numProcPerNode.
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Decision is the outcome of evaluating every policy on one request.
type Decision struct {
	// Allowed is false when any violation has Action deny.
	Allowed bool
	// Governed is false for TrainJobs the policies do not apply to (non-MPI);
	// they are allowed untouched without evaluation.
	Governed bool
	// Violations lists every violation, sorted by policy, field and message.
	Violations []Violation
	// Mutation is what the mutating webhook applies: set by Mutations (a
	// MutationOnly request) only; Decide evaluates validation rules.
	Mutation Mutation
	// DryRunMutations are the mutations of dryrun policies, logged only.
	DryRunMutations  []Change
	PolicySetVersion string
	Latency          time.Duration
}

// Denials returns the violations whose Action is deny.
func (d *Decision) Denials() []Violation { return d.withAction(EnforceDeny) }

// Warnings returns the violations whose Action is warn.
func (d *Decision) Warnings() []Violation { return d.withAction(EnforceWarn) }

func (d *Decision) withAction(a Enforcement) []Violation {
	var out []Violation
	for _, v := range d.Violations {
		if v.Action == a {
			out = append(out, v)
		}
	}
	return out
}

// Governs says whether TrainJobs of this (Cluster)TrainingRuntime are governed
// by the policies: only MPI runtimes (spec.mlPolicy.mpi) are. Webhooks call it
// before rendering so other TrainJobs pass untouched and fast.
func Governs(runtime client.Object) bool {
	switch r := runtime.(type) {
	case *trainer.ClusterTrainingRuntime:
		return r.Spec.MLPolicy != nil && r.Spec.MLPolicy.MPI != nil
	case *trainer.TrainingRuntime:
		return r.Spec.MLPolicy != nil && r.Spec.MLPolicy.MPI != nil
	}
	return false
}
