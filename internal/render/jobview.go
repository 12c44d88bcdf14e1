// Package render turns a TrainJob and its (Cluster)TrainingRuntime into a JobView:
// the exact pods the Kubeflow Trainer will create for it, and what those pods are
// charged against ResourceQuota. It renders with the Trainer's own runtime
// packages, so the picture is the one the Trainer controller itself produces.
//
// Usage:
//
//	r, err := render.NewRenderer(ctx) // once, at startup; safe for concurrent use
//	// Objects read from files (not from the apiserver) need the apiserver's defaults first:
//	err = render.ApplyDefaults(trainJob, runtime, &limitRange)
//	view, err := r.Render(ctx, render.Input{TrainJob: trainJob, Runtime: runtime,
//		LimitRanges: limitRanges, RuntimeClasses: runtimeClasses})
//	view.Workers.Pods, view.SlotsPerWorker, view.GPUsPerWorker, view.Total.QuotaUsage(), view.Problems
//
// Render returns an error only when the TrainJob cannot be rendered at all; pods
// that render but that the apiserver would reject are listed in JobView.Problems.
// test/integration/render checks JobViews against the JobSets the real Trainer
// controller creates and against what a real kube-apiserver charges their pods.
package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Role names a replicated job's part in an MPI job.
type Role string

const (
	// RoleLauncher is the replicated job that runs mpirun.
	RoleLauncher Role = "launcher"
	// RoleWorker is the replicated job whose pods are listed in the hostfile.
	RoleWorker Role = "worker"
	// RoleOther is any other replicated job (initializers, for example).
	RoleOther Role = "other"
)

// JobView is what a TrainJob will really create.
type JobView struct {
	// RuntimeKind is ClusterTrainingRuntime or TrainingRuntime; RuntimeName its name.
	RuntimeKind string
	RuntimeName string

	// MPI is true when the runtime has mlPolicy.mpi; only then are the MPI fields set.
	MPI               bool
	MPIImplementation string
	RunLauncherAsNode bool
	// NumNodes is the effective mlPolicy numNodes (TrainJob's trainer.numNodes wins).
	NumNodes int32
	// SlotsPerWorker is the effective number of MPI slots on each hostfile line.
	SlotsPerWorker int32
	// GPUsPerWorker is the GPU count of one worker pod (every GPU resource name summed).
	GPUsPerWorker int64
	// Hostfile is the hostfile the MPI plugin renders, line by line.
	Hostfile []string

	// Launcher and Workers point into ReplicatedJobs; nil when the runtime has none.
	Launcher *ReplicatedJobView
	Workers  *ReplicatedJobView
	// ReplicatedJobs lists every replicated job in the order of the rendered JobSet.
	ReplicatedJobs []ReplicatedJobView

	// Total is what the whole job is charged against ResourceQuota.
	Total Charge

	// Objects are what the Trainer and the JobSet controller create for the
	// job besides pods (objects.go): object-count quotas charge them.
	Objects []Objects

	// RunsElsewhere is true when a controller other than this cluster's
	// Trainer runs the job (spec.managedBy, Kueue's MultiKueue: it runs a
	// copy on a worker cluster). The replicated jobs above are what that copy
	// creates, judged by every policy, but no pod of the job is created here,
	// so it charges this cluster's ResourceQuotas nothing: quota.PartsOf (its
	// reservation, what it holds for other jobs' decisions) and the policy
	// input's quotas (aggregate-quota) read this one field.
	RunsElsewhere bool

	// Gang is the PodGroup the Trainer builds for a gang-scheduled job
	// (gang.go); nil when the runtime has no podGroupPolicy.
	Gang *Gang

	// Problems are reasons the rendered pods would be rejected by the apiserver even
	// though the TrainJob itself is valid: the job would hang after admission.
	Problems field.ErrorList
}

// ReplicatedJobView is one replicated job of the rendered JobSet.
type ReplicatedJobView struct {
	Name string
	Role Role
	// Pods is replicas x parallelism: how many pods this replicated job creates.
	Pods int32
	// PodTemplate is the effective pod template after runtime patches and plugins.
	PodTemplate corev1.PodTemplateSpec
	// PerPod is what one pod is charged against ResourceQuota.
	PerPod Charge
	// PriorityClassName is the pods' PriorityClass as admitted: the
	// template's, or the cluster's globalDefault class when it names none
	// (the Priority admission plugin). Quota scopes select by it.
	PriorityClassName string
	// ServiceAccountName is the ServiceAccount the pods run as: the
	// template's, or "default" (the ServiceAccount admission plugin).
	ServiceAccountName string
	// Requested is the pod template's metadata without the Input.OwnManager
	// entry; nil when the TrainJob has none (PodTemplate's is the same).
	Requested *PodMetadata
}

// PodMetadata is what a pod template's labels and annotations are.
type PodMetadata struct {
	Labels      map[string]string
	Annotations map[string]string
}

// Charge is what ResourceQuota counts for a set of pods, computed the way the
// kube-apiserver's pod quota evaluator does (requests default to limits,
// LimitRange defaults, RuntimeClass overhead, init containers by the max rule,
// restartable init containers added).
type Charge struct {
	Requests corev1.ResourceList
	Limits   corev1.ResourceList
	Pods     int64
	// Undeclared lists, per resource name, whether some container does not declare
	// a request (or limit) for it: a quota on that resource then rejects the pod.
	MissingRequests []corev1.ResourceName
	MissingLimits   []corev1.ResourceName
}
