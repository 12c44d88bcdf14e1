package pipeline

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/capacity"
	"github.com/mpiguard/mpiguard/internal/gang"
)

// Cluster is what a decision reads of the cluster. The webhooks read the
// manager's cache (and, for quota decisions, the apiserver); `mpiguard check`
// reads the documents it was given.
type Cluster interface {
	// Runtime returns the ClusterTrainingRuntime or TrainingRuntime job
	// refers to, its kind set, or an error that says which is missing and
	// how to fix it.
	Runtime(ctx context.Context, job *trainer.TrainJob) (client.Object, error)
	// Snapshot returns the runtime snapshot the Trainer builds a stored
	// job's later JobSets from (snapshot.go), nil when the job has none, or
	// a *SnapshotError when the Trainer would refuse it.
	Snapshot(ctx context.Context, job *trainer.TrainJob) (client.Object, error)
	// JobSet returns the JobSet the Trainer built for a stored job (the
	// same name, controlled by the job), nil when it has none.
	JobSet(ctx context.Context, job *trainer.TrainJob) (*jobsetv1alpha2.JobSet, error)
	// Namespace returns what namespace name contributes to a decision.
	Namespace(ctx context.Context, name string) (*Namespace, error)
	// ObjectExists says whether the object of kind gvk named key exists: one
	// a job creates (objects.go), which the Trainer does not create again.
	ObjectExists(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (bool, error)
	// VolcanoQueues returns the cluster's Volcano queues (gang.go), read
	// only for a job that gangs with Volcano.
	VolcanoQueues(ctx context.Context) (*gang.Queues, error)
	// Nodes returns the cluster's nodes by shape (nodes.go), nil when none
	// are known: the node-capacity policy then judges nothing.
	Nodes(ctx context.Context) (*capacity.Summary, error)
}

// Namespace is what a namespace contributes to a decision.
type Namespace struct {
	// Namespace's labels and annotations select exemptions and parameters.
	Namespace *corev1.Namespace
	// Quotas are the namespace's ResourceQuotas; their status.used counts.
	// What is reserved of them is not the namespace's: a decision is judged
	// against a quota state (input.QuotaState, Pipeline.Judge).
	Quotas []corev1.ResourceQuota
	// LimitRanges default and bound the containers the job's pods get.
	LimitRanges []corev1.LimitRange
	// RuntimeClasses add their pod overhead to what pods are charged.
	RuntimeClasses []nodev1.RuntimeClass
	// PriorityClasses are the cluster's: the Priority admission plugin gives
	// pods naming none the globalDefault class and rejects pods naming one
	// that does not exist (render.Input.PriorityClasses; none: not known).
	PriorityClasses []schedulingv1.PriorityClass
	// ServiceAccounts are the namespace's, names only: the ServiceAccount
	// admission plugin rejects pods naming one that does not exist
	// (render.Input.ServiceAccounts; none: not known).
	ServiceAccounts []corev1.ServiceAccount
}
