package trainjob

import "github.com/mpiguard/mpiguard/internal/pipeline"

// RBAC (ClusterRole: the webhooks judge TrainJobs of every namespace, from the
// manager's cache, so each of these is listed and watched cluster-wide):
//
// The namespace's other TrainJobs (aggregate quota, pending jobs).
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch
// The runtime a TrainJob references, rendered into its pods.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=clustertrainingruntimes;trainingruntimes,verbs=get;list;watch
// Namespace labels and annotations (exemptions, parameters), the quota and
// limit ranges the job's pods will be charged against, and the pods of jobs
// that already run (only pods with a JobSet label are cached).
// +kubebuilder:rbac:groups="",resources=namespaces;resourcequotas;limitranges;pods,verbs=get;list;watch
// A stored job's runtime snapshot (<job>-runtime-snapshot), which the Trainer
// builds its resumes from: read with a GET when a job is judged, never listed
// or watched (internal/pipeline/snapshot.go).
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// The JobSet the Trainer built for a stored job that mpiguard cannot render:
// its pods are what the job charges (read with a GET, never listed).
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get
// RuntimeClass overhead counts against the quota.
// +kubebuilder:rbac:groups=node.k8s.io,resources=runtimeclasses,verbs=get;list;watch
// PriorityClasses: the class the Priority admission plugin gives the pods
// (globalDefault), which quota scopes select by, and whether the one they
// name exists.
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// ServiceAccounts (their metadata): whether the one a pod names exists, as
// the ServiceAccount admission plugin refuses pods naming one that does not.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch

// cluster reads, from the manager's cache (and the apiserver for what the
// cache does not have yet), the objects a TrainJob's decision depends on.
type cluster = pipeline.ClientCluster
