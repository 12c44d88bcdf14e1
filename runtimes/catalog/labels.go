package catalog

import trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"

// Label and annotation keys that mpiguard puts on curated runtimes. Admins may put
// the mpi-implementation label on their own runtimes too: the template webhook and
// the smoke test read it to know how the launcher adapts the hostfile.
const (
	// LabelCurated marks a ClusterTrainingRuntime that the publisher owns and keeps
	// in sync with the binary. Edits to such runtimes are reverted.
	LabelCurated = "mpiguard.io/curated"
	// LabelManagedBy is the well-known managed-by label, set to ManagedByValue.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "mpiguard"

	// LabelMPIImplementation names the real MPI implementation of a runtime
	// (OpenMPI, IntelMPI, MPICH). The Trainer's CRD only accepts
	// mpiImplementation: OpenMPI, so this label is where the truth lives.
	LabelMPIImplementation = "mpiguard.io/mpi-implementation"
	// LabelFamily is the stable alias name of a runtime and all its versions.
	LabelFamily = "mpiguard.io/runtime-family"
	// LabelVersion is the version of a runtime within its family (v1, v2, ...).
	LabelVersion = "mpiguard.io/runtime-version"
	// LabelGangScheduler is set on gang-scheduling variants: volcano or coscheduling.
	LabelGangScheduler = "mpiguard.io/gang-scheduler"
	// LabelAlias is "true" on the stable alias of a family.
	LabelAlias = "mpiguard.io/alias"
	// AnnotationAliasOf names the versioned runtime an alias currently copies.
	AnnotationAliasOf = "mpiguard.io/alias-of"
	// LabelPlatform is "openshift" on runtimes published for OpenShift
	// (no fixed UID or fsGroup); absent on the Kubernetes ones.
	LabelPlatform = "mpiguard.io/platform"

	// LabelTrainerSupport and SupportDeprecated are the Trainer's own deprecation
	// marker (github.com/kubeflow/trainer/v2/pkg/constants LabelSupport): the
	// Trainer warns every TrainJob that references a runtime labelled this way.
	LabelTrainerSupport = trainerconstants.LabelSupport
	SupportDeprecated   = trainerconstants.SupportDeprecated
)

// MPI implementations as written in LabelMPIImplementation.
const (
	ImplementationOpenMPI = "OpenMPI"
	ImplementationIntel   = "IntelMPI"
	ImplementationMPICH   = "MPICH"
)

// Gang scheduler names: the LabelGangScheduler values and the pod schedulerName
// each variant uses.
const (
	GangVolcano               = "volcano"
	GangCoscheduling          = "coscheduling"
	VolcanoSchedulerName      = "volcano"
	CoschedulingSchedulerName = "scheduler-plugins-scheduler"
	// VolcanoQueueAnnotation is read by the Trainer's Volcano plugin from the
	// JobSet template metadata to pick the PodGroup queue.
	VolcanoQueueAnnotation = "scheduling.volcano.sh/queue-name"
	VolcanoDefaultQueue    = "default"
	// CoschedulingTimeoutSeconds is how long the scheduler waits to place the whole
	// gang; MPI images are large, so it is longer than the Trainer's 60s default.
	CoschedulingTimeoutSeconds = 120
)
