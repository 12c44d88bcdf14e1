// Package networkpolicies keeps one NetworkPolicy per MPI TrainJob.
//
// An MPI TrainJob needs Launcher-to-Worker SSH and Worker-to-Worker traffic on
// ports that OpenMPI picks at run time, while the namespace around it should stay
// closed. The controller here watches TrainJobs, decides from the referenced
// (Cluster)TrainingRuntime whether a job is MPI, and server-side applies a
// NetworkPolicy named after the job, controlled by it (owner reference), that
// selects only that job's pods through the JobSet labels. Which rules the policy
// carries comes from a template chosen by annotation on the namespace or on the
// runtime (see annotations.go and docs/networkpolicies.md).
//
// Drift is repaired every time: the controller owns the NetworkPolicies it
// writes, so a deletion or an edit re-queues the TrainJob and the policy is
// applied again.
package networkpolicies
