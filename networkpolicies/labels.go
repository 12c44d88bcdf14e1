package networkpolicies

import (
	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// Pod labels written by the JobSet controller on every pod of a JobSet. The Trainer
// names the JobSet after the TrainJob, so these identify a TrainJob's pods. Taken
// from the pinned jobset module rather than spelled here, so a rename upstream
// breaks the build instead of silently selecting nothing.
const (
	jobSetNameLabel        = jobsetv1alpha2.JobSetNameKey        // jobset.sigs.k8s.io/jobset-name
	replicatedJobNameLabel = jobsetv1alpha2.ReplicatedJobNameKey // jobset.sigs.k8s.io/replicatedjob-name
)

// Replicated job names of the Trainer's MPI runtimes, from the pinned Trainer
// module: the Launcher runs mpirun ("launcher"), Workers are "node".
const (
	launcherReplicatedJob = trainerconstants.Launcher
	workerReplicatedJob   = trainerconstants.Node
)

// Labels mpiguard puts on the NetworkPolicies it writes.
const (
	// ManagedByLabel marks a policy as written by this controller; together with the
	// name it lets the controller recognise its own policy when someone removed the
	// owner reference.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel.
	ManagedByValue = "mpiguard-networkpolicies"
	// TemplateLabel records which template produced the policy (for kubectl -l).
	TemplateLabel = "mpiguard.io/network-policy-template"
)

// FieldOwner is the single server-side apply field manager of this controller.
const FieldOwner = "mpiguard.io/networkpolicies"
