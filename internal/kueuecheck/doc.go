// Package kueuecheck is mpiguard as a Kueue AdmissionCheck: Kueue's
// extension point for "may this Workload start?". Admins name an
// AdmissionCheck whose spec.controllerName is ControllerName in their
// ClusterQueues; for each Workload of an MPI TrainJob whose quota Kueue has
// reserved, the controller (on the elected leader) runs the job as it will
// run through the one admission pipeline (internal/pipeline) — the resume
// Kueue is about to make, with the node labels and tolerations of the
// ResourceFlavors Kueue assigned, against the namespace's ResourceQuotas and
// mpiguard's reservations — and sets the check's state on the Workload:
//
//	Ready     allowed; the namespace quota it needs is reserved (the
//	          QuotaReservation entry the webhook writes for a resume), so
//	          the resume that follows is allowed. While Kueue waits for
//	          other checks, the entry is renewed (renew.go): never Ready
//	          over a released entry.
//	Retry     denied only because the namespace's quota is busy now: it
//	          fits an idle namespace. Kueue releases the ClusterQueue quota
//	          and requeues the Workload after requeueAfterSeconds.
//	Rejected  denied for a reason waiting will not fix. Kueue deactivates
//	          the Workload (spec.active=false), which evicts it and
//	          releases its quota; it is not requeued.
//
// The message of every state is mpiguard's own text: the denial the webhook
// would answer the resume with. A Workload Kueue cannot place at all,
// because mpiguard's placement (residency affinity) matches no flavor of
// its ClusterQueue, gets mpiguard's reason on its Pending check
// (unplaced.go).
//
// decide.go is pure; flavors.go builds the resume as Kueue writes it;
// controller.go, evaluate.go, renew.go, unplaced.go and status.go observe
// and write.
package kueuecheck
