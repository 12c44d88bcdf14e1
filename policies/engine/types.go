package engine

import (
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/policies/gang"
	"github.com/mpiguard/mpiguard/policies/quota"
	"github.com/mpiguard/mpiguard/policies/render"
)

// Operation is the admission operation being decided.
type Operation string

const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
)

// Request is everything one admission decision depends on. The engine reads it
// and never modifies it.
type Request struct {
	Operation Operation
	// User and Groups identify who submitted (for the decision log and policies).
	User   string
	Groups []string
	DryRun bool
	// MutationOnly marks the mutating webhook's pass: it is evaluated for its
	// mutations only and is neither logged nor counted, so each admission shows
	// up once in the decision log and metrics (the validating pass).
	MutationOnly bool
	// RecordLater leaves the decision out of the log and metrics: the caller
	// calls Engine.Record with the final decision (see Engine.Record).
	RecordLater bool

	// TrainJob is the submitted object; OldTrainJob the stored one on UPDATE.
	TrainJob    *trainer.TrainJob
	OldTrainJob *trainer.TrainJob
	// View is what TrainJob renders to with its runtime (policies/render).
	View *render.JobView

	// Namespace is the TrainJob's namespace (labels and annotations matter).
	Namespace *corev1.Namespace
	// Quotas are the namespace's ResourceQuotas; their status.used is honoured.
	Quotas []corev1.ResourceQuota
	// Reserved are jobs that quotas do not count yet but will: TrainJobs admitted
	// whose pods do not exist yet, and submits being admitted right now. They are
	// added to each quota's status.used. Do not include TrainJob itself.
	Reserved []Reservation

	// Runtime is the metadata of the (Cluster)TrainingRuntime the job uses, so
	// policies can key on runtime labels and annotations.
	Runtime RuntimeMeta

	// VolcanoQueues are the cluster's Volcano queues, read for a job that
	// gangs with Volcano (nil otherwise): input.gang (policies/gang).
	VolcanoQueues *gang.Queues

	// entries are the TrainJob's entries under mpiguard's manager, as the
	// validating pass checked them (entries.go); set on the engine's copy.
	entries []ownEntry
}

// RuntimeMeta identifies a (Cluster)TrainingRuntime to policies.
type RuntimeMeta struct {
	Kind        string
	Name        string
	Labels      map[string]string
	Annotations map[string]string
}

// Reservation is an admitted job a quota will be charged for but does not
// count yet: its parts are what its missing pods charge each quota (see
// policies/quota).
type Reservation = quota.Holder

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
