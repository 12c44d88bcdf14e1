package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a RuntimeTest, in the order a healthy test sets them True.
const (
	// ConditionJobCreated: the smoke-test TrainJob exists.
	ConditionJobCreated = "JobCreated"
	// ConditionPodsScheduled: every launcher and Worker pod is bound to a node.
	ConditionPodsScheduled = "PodsScheduled"
	// ConditionImagesPulled: every container of those pods got its image.
	ConditionImagesPulled = "ImagesPulled"
	// ConditionSSHReady: every Worker pod is Ready (its sshd accepts connections).
	ConditionSSHReady = "SSHReady"
	// ConditionMPISpawned: mpirun reached every host of the hostfile.
	ConditionMPISpawned = "MPISpawned"
	// ConditionSucceeded: the verdict. False with a reason naming the cause.
	ConditionSucceeded = "Succeeded"
)

// Reasons used on RuntimeTest conditions.
const (
	ReasonCreated          = "Created"
	ReasonCreateFailed     = "CreateFailed"
	ReasonRuntimeNotFound  = "RuntimeNotFound"
	ReasonNotMPI           = "NotMPIRuntime"
	ReasonWaiting          = "Waiting"
	ReasonAllScheduled     = "AllScheduled"
	ReasonUnschedulable    = "Unschedulable"
	ReasonAllPulled        = "AllPulled"
	ReasonImagePullBackOff = "ImagePullBackOff"
	ReasonWorkersReady     = "WorkersReady"
	ReasonAllHosts         = "AllHostsReached"
	ReasonSingleHost       = "SingleHost"
	ReasonTooFewHosts      = "TooFewHosts"
	ReasonOOMKilled        = "OOMKilled"
	ReasonLauncherFailed   = "LauncherFailed"
	ReasonTrainJobFailed   = "TrainJobFailed"
	ReasonTimeout          = "Timeout"
	ReasonPassed           = "Passed"
)

// Reasons for pods that are never created: the apiserver refused them (or
// the Jobs that create them), and only the Job or JobSet controller's
// Warning events say so. Set on PodsScheduled and, unless waiting can help
// (QuotaExceeded, errors that are not a refusal), on Succeeded.
const (
	// ReasonPodSecurity: Pod Security admission rejected the pods ("violates PodSecurity").
	ReasonPodSecurity = "PodSecurity"
	// ReasonSecurityContextConstraints: no OpenShift SCC the pods' service account may use admits them.
	ReasonSecurityContextConstraints = "SecurityContextConstraints"
	// ReasonQuotaExceeded: a ResourceQuota has no room for them; waits, since quota may free up.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonPodsRejected: any other refusal (a webhook, a LimitRange, an invalid template).
	ReasonPodsRejected = "PodsRejected"
)

// Phases shown in `kubectl get runtimetests`.
const (
	PhasePending   = "Pending"
	PhaseRunning   = "Running"
	PhaseSucceeded = "Succeeded"
	PhaseFailed    = "Failed"
)

// RuntimeRef names the runtime under test.
type RuntimeRef struct {
	// kind is ClusterTrainingRuntime or TrainingRuntime (in the RuntimeTest's namespace).
	// +kubebuilder:validation:Enum=ClusterTrainingRuntime;TrainingRuntime
	// +kubebuilder:default=ClusterTrainingRuntime
	// +optional
	Kind string `json:"kind,omitempty"`
	// name of the runtime.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// RuntimeTestSpec is what to test and how long to wait.
type RuntimeTestSpec struct {
	// runtimeRef is the runtime to test.
	RuntimeRef RuntimeRef `json:"runtimeRef"`

	// workers is how many Worker pods the smoke-test TrainJob gets (besides the launcher).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	// +kubebuilder:default=2
	// +optional
	Workers int32 `json:"workers,omitempty"`

	// slotsPerWorker is the number of MPI slots on each Worker (numProcPerNode).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:default=1
	// +optional
	SlotsPerWorker int32 `json:"slotsPerWorker,omitempty"`

	// image overrides the launcher image (the runtime's image otherwise).
	// +optional
	Image string `json:"image,omitempty"`

	// timeoutSeconds bounds the whole test, from TrainJob creation to verdict.
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:default=600
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// keepTrainJob keeps the smoke-test TrainJob after the verdict, for debugging.
	// +optional
	KeepTrainJob bool `json:"keepTrainJob,omitempty"`
}

// RuntimeTestStatus reports progress and the verdict.
type RuntimeTestStatus struct {
	// phase is Pending, Running, Succeeded or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// trainJobName is the smoke-test TrainJob in the RuntimeTest's namespace.
	// +optional
	TrainJobName string `json:"trainJobName,omitempty"`
	// startTime is when the TrainJob was created; the timeout counts from here.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the verdict was reached.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// hostsExpected is the number of hosts in the TrainJob's hostfile.
	// +optional
	HostsExpected int32 `json:"hostsExpected,omitempty"`
	// hostsSeen is the number of distinct hosts mpirun ran on (from the launcher's termination message).
	// +optional
	HostsSeen int32 `json:"hostsSeen,omitempty"`
	// trainJobDeleted is true once the smoke-test TrainJob has been cleaned up.
	// +optional
	TrainJobDeleted bool `json:"trainJobDeleted,omitempty"`
	// conditions: JobCreated, PodsScheduled, ImagesPulled, SSHReady, MPISpawned, Succeeded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rtt,categories=mpiguard
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters: the smoke-test TrainJob is named <name>-smoke and the Trainer derives pod and Service names from it"
// +kubebuilder:printcolumn:name="Runtime",type=string,JSONPath=`.spec.runtimeRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Hosts",type=integer,JSONPath=`.status.hostsSeen`,description="Distinct hosts mpirun reached"
// +kubebuilder:printcolumn:name="Expected",type=integer,JSONPath=`.status.hostsExpected`,description="Hosts in the hostfile"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Succeeded")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Succeeded")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// RuntimeTest runs a minimal MPI TrainJob (1 launcher + N Workers) on a runtime
// and reports, condition by condition, whether the runtime really works.
type RuntimeTest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is immutable: a RuntimeTest runs once; delete and re-create it to run again.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a RuntimeTest runs once; delete and re-create it to test again"
	Spec   RuntimeTestSpec   `json:"spec"`
	Status RuntimeTestStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// RuntimeTestList is a list of RuntimeTests.
type RuntimeTestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RuntimeTest `json:"items"`
}
