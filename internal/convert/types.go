package convert

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The MPI Operator's kubeflow.org/v2beta1 MPIJob, the fields convert reads
// and nothing else: the MPI Operator's module is not a dependency (it is not
// served by the module proxy). Field names and JSON tags are the MPI
// Operator's (pkg/apis/kubeflow/v2beta1/types.go); a field of a document that
// is not here is reported as unknown, never dropped silently.

// APIVersion and Kind of the documents convert reads.
const (
	APIVersion = "kubeflow.org/v2beta1"
	Kind       = "MPIJob"
)

// MPIJob is an MPI Operator MPIJob.
type MPIJob struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       MPIJobSpec        `json:"spec"`
	// Status is what the MPI Operator reported; convert ignores it (a note
	// says so) and reads it only so that it is not reported as unknown.
	Status map[string]any `json:"status,omitempty"`
}

// MPIJobSpec is the MPIJob's spec.
type MPIJobSpec struct {
	SlotsPerWorker         *int32                  `json:"slotsPerWorker,omitempty"`
	RunLauncherAsWorker    *bool                   `json:"runLauncherAsWorker,omitempty"`
	RunPolicy              RunPolicy               `json:"runPolicy,omitempty"`
	MPIReplicaSpecs        map[string]*ReplicaSpec `json:"mpiReplicaSpecs"`
	SSHAuthMountPath       string                  `json:"sshAuthMountPath,omitempty"`
	LauncherCreationPolicy string                  `json:"launcherCreationPolicy,omitempty"`
	MPIImplementation      string                  `json:"mpiImplementation,omitempty"`
}

// RunPolicy is the MPIJob's spec.runPolicy.
type RunPolicy struct {
	CleanPodPolicy          *string           `json:"cleanPodPolicy,omitempty"`
	TTLSecondsAfterFinished *int32            `json:"ttlSecondsAfterFinished,omitempty"`
	ActiveDeadlineSeconds   *int64            `json:"activeDeadlineSeconds,omitempty"`
	BackoffLimit            *int32            `json:"backoffLimit,omitempty"`
	SchedulingPolicy        *SchedulingPolicy `json:"schedulingPolicy,omitempty"`
	Suspend                 *bool             `json:"suspend,omitempty"`
	ManagedBy               *string           `json:"managedBy,omitempty"`
}

// SchedulingPolicy is spec.runPolicy.schedulingPolicy: what the MPI
// Operator gives the PodGroup of its gang scheduler.
type SchedulingPolicy struct {
	MinAvailable           *int32               `json:"minAvailable,omitempty"`
	Queue                  string               `json:"queue,omitempty"`
	MinResources           *corev1.ResourceList `json:"minResources,omitempty"`
	PriorityClass          string               `json:"priorityClass,omitempty"`
	ScheduleTimeoutSeconds *int32               `json:"scheduleTimeoutSeconds,omitempty"`
}

// ReplicaSpec is one of spec.mpiReplicaSpecs (Launcher, Worker).
type ReplicaSpec struct {
	Replicas      *int32                 `json:"replicas,omitempty"`
	Template      corev1.PodTemplateSpec `json:"template,omitempty"`
	RestartPolicy string                 `json:"restartPolicy,omitempty"`
}

// The MPI Operator's names and defaults (v0.6.0, pkg/apis/kubeflow/v2beta1:
// default.go, constants.go).
const (
	Launcher = "Launcher"
	Worker   = "Worker"

	OpenMPI = "OpenMPI"
	Intel   = "Intel"
	MPICH   = "MPICH"

	AtStartup           = "AtStartup"
	WaitForWorkersReady = "WaitForWorkersReady"

	// DefaultSSHAuthMountPath is where the MPI Operator mounts the SSH keys
	// when sshAuthMountPath is not set.
	DefaultSSHAuthMountPath = "/root/.ssh"
	// MPIOperatorController is runPolicy.managedBy's value for the MPI Operator itself.
	MPIOperatorController = "kubeflow.org/mpi-operator"
	// MultiKueueController is runPolicy.managedBy's value for MultiKueue.
	MultiKueueController = "kueue.x-k8s.io/multikueue"
)
