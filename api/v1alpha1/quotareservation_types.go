package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Operations an entry was admitted for.
const (
	OperationCreate = "CREATE"
	OperationUpdate = "UPDATE"
)

// QuotaReservation records the quota that TrainJobs admitted by mpiguard in one
// namespace will be charged but that the namespace's ResourceQuotas do not count
// yet: their pods do not exist. It lives in mpiguard's own namespace (tenants
// cannot edit it), one object per governed namespace, named after it.
//
// Every mpiguard replica decides a quota-relevant admission against hard -
// used - what every entry still needs, then appends its entry with an update
// that carries the resourceVersion it read: two replicas that decided on the
// same state cannot both write, so they cannot together promise more than the
// quota holds. The elected leader retires entries once the job's pods exist,
// or the job is suspended, finished, deleted or never appeared.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=qres,categories=mpiguard
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.namespace`,description="The namespace whose ResourceQuotas the entries are charged against"
// +kubebuilder:printcolumn:name="Jobs",type=string,JSONPath=`.spec.entries[*].trainJob`,description="TrainJobs holding quota"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type QuotaReservation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec QuotaReservationSpec `json:"spec"`
}

// QuotaReservationSpec lists the entries of one governed namespace.
type QuotaReservationSpec struct {
	// namespace is the governed namespace whose ResourceQuotas the entries are charged against.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// podShapes are what one pod counts for quota and what quota scopes
	// select it by, each once: parts refer to them by index (shape), so a
	// namespace of many like jobs (one runtime's) stores their pods' usage
	// once, not once per entry; every write replaces the object whole.
	// +listType=atomic
	// +optional
	PodShapes []PodShape `json:"podShapes,omitempty"`
	// objectShapes are what the objects of a job other than its pods count
	// for object-count quotas, each once: parts refer to them by index
	// (objectsShape), as they refer to podShapes.
	// +listType=atomic
	// +optional
	ObjectShapes []corev1.ResourceList `json:"objectShapes,omitempty"`
	// entries, one per TrainJob name (ReservationEntry). mpiguard replaces
	// the list whole on every write (with the resourceVersion it read). It
	// has no schema in the CRD, so the apiserver does not validate, prune or
	// coerce every entry on every write; mpiguard checks on every read what
	// a schema would and more (reservations.validEntries), and a value of
	// the wrong type fails the decode of its own object only (UnmarshalJSON).
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Entries []ReservationEntry `json:"entries,omitempty"`
	// uncounted is, per ResourceQuota of the namespace, what its
	// status.used counts less than the pods that exist charge it, as the
	// elected leader last read both: kube-controller-manager's quota
	// controller recomputes status.used from the pods its informer has seen,
	// and a recompute that raced pods' creates leaves them out until its
	// next sync. Admission adds it to status.used; the leader removes it
	// once the quota counts those pods (docs/quota.md).
	// +listType=atomic
	// +optional
	Uncounted []UncountedUsage `json:"uncounted,omitempty"`

	// DecodeError is, in a spec read back, what kept it from decoding (nil
	// when it did): a value of the wrong type in spec.entries, edited by
	// hand (UnmarshalJSON). The spec is then empty, not half-decoded.
	// Never stored.
	DecodeError *SpecDecodeError `json:"-"`
}

// UncountedUsage is what one ResourceQuota's status.used lacks of the pods
// that exist.
type UncountedUsage struct {
	// resourceQuota is the quota's name in spec.namespace.
	// +kubebuilder:validation:MinLength=1
	ResourceQuota string `json:"resourceQuota"`
	// since is when the leader first found the quota counting less than its
	// pods: after a while (longer than the quota controller's full resync)
	// the record is dropped, as a difference mpiguard cannot explain.
	Since metav1.Time `json:"since"`
	// usage is what status.used lacks, by quota resource name.
	Usage corev1.ResourceList `json:"usage"`
}

// ReservationEntry is what one admitted TrainJob holds.
type ReservationEntry struct {
	// trainJob is the TrainJob's name in spec.namespace.
	// +kubebuilder:validation:MinLength=1
	TrainJob string `json:"trainJob"`
	// uid of the TrainJob as admission saw it: an entry whose job exists under
	// another UID was left by a create that failed.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// requestUID is the admission request that wrote the entry.
	// +optional
	RequestUID types.UID `json:"requestUID,omitempty"`
	// operation is CREATE (a new running job) or UPDATE (a resume).
	// +kubebuilder:validation:Enum=CREATE;UPDATE
	Operation string `json:"operation"`
	// resumedFromGeneration is, for a resume, the generation of the suspended
	// TrainJob it updates: while the job is still suspended at that generation,
	// the resume has not landed (yet).
	// +optional
	ResumedFromGeneration int64 `json:"resumedFromGeneration,omitempty"`
	// admittedAt is when the decision was made.
	AdmittedAt metav1.Time `json:"admittedAt"`
	// holdUntil is when the entry stops being taken on trust: after it, the
	// entry goes unless a live read shows its TrainJob.
	HoldUntil metav1.Time `json:"holdUntil"`
	// parts is what each replicated job's pods charge the quotas.
	// +listType=atomic
	// +optional
	Parts []ReservedPart `json:"parts,omitempty"`
}

// ReservedPart is what the pods of one replicated job charge, or, in the
// part of no replicated job, what the job's other objects count.
type ReservedPart struct {
	// replicatedJob is the JobSet replicated job (launcher, node, ...);
	// empty in the part of the job's other objects.
	// +optional
	ReplicatedJob string `json:"replicatedJob,omitempty"`
	// pods is how many pods it creates; none in the part of the job's
	// other objects.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Pods int32 `json:"pods,omitempty"`
	// shape is the index in spec.podShapes of what one of its pods counts
	// for quota and what quota scopes select it by. Each quota decision
	// charges it against the ResourceQuotas that exist then, so a quota
	// created or changed while the job waits for its pods counts it too.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Shape *int32 `json:"shape,omitempty"`
	// jobs is how many Jobs the JobSet controller creates for this
	// replicated job (its replicas), which count/jobs.batch quotas charge:
	// held until all its pods exist (a Job exists before its pods).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Jobs int32 `json:"jobs,omitempty"`
	// objectsShape is, in the part of no replicated job (replicatedJob "",
	// pods 0), the index in spec.objectShapes of what the other objects the
	// Trainer and the JobSet controller create for the job (its JobSet,
	// headless Service, SSH Secret, ConfigMaps, PodGroup,
	// PersistentVolumeClaims) count for object-count quotas: held until any
	// pod of the job exists (they are all created before its first pod).
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObjectsShape *int32 `json:"objectsShape,omitempty"`
}

// PodShape is what one pod counts for quota.
type PodShape struct {
	// perPod is the pod's usage as the apiserver's pod quota evaluator
	// counts it, by its canonical names (pods, requests.*, limits.*).
	// +optional
	PerPod corev1.ResourceList `json:"perPod,omitempty"`
	// scope is what quota scopes select the pod by (none: no field).
	// +optional
	Scope PodScope `json:"scope,omitzero"`
}

// PodScope is what ResourceQuota scopes select a pod by.
type PodScope struct {
	// priorityClassName of the pods (scope PriorityClass).
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// terminating: the pods set activeDeadlineSeconds (scopes Terminating, NotTerminating).
	// +optional
	Terminating bool `json:"terminating,omitempty"`
	// bestEffort: no container requests or limits cpu or memory (scopes BestEffort, NotBestEffort).
	// +optional
	BestEffort bool `json:"bestEffort,omitempty"`
	// crossNamespaceAffinity: a pod (anti-)affinity term names other
	// namespaces (scope CrossNamespacePodAffinity).
	// +optional
	CrossNamespaceAffinity bool `json:"crossNamespaceAffinity,omitempty"`
}

// QuotaReservationList is a list of QuotaReservations.
// +kubebuilder:object:root=true
type QuotaReservationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []QuotaReservation `json:"items"`
}
