// Package pipeline is mpiguard's one admission pipeline: the single place
// where a TrainJob submit is turned into an evaluation. The mutating and
// validating webhooks (webhooks/trainjob), the quota reservation transaction
// (internal/reservations/admit), the Kueue check, `mpiguard check`
// (internal/check) and audit call the same two steps: Prepare (read the
// runtime or snapshot and the namespace once, render, mutate, build the
// policy input; say whether the job is governed) and Judge (every policy,
// against a given quota state, input.QuotaState, as often as a quota round
// needs). Run and RunAgainst are the two in one call. Callers differ only in the Cluster they read (the
// manager's cache, documents on disk) and the Stage they ask for:
//
//	Mutate    the mutating webhook: render, ask the policies for their
//	          mutations, restore what an UPDATE leaves out of mpiguard's
//	          stored decisions (restore.go), answer with the JSON patch.
//	Validate  the validating webhook: render the object as the apiserver
//	          will store it and judge it.
//	Admit     both, as the apiserver runs them one after the other: render,
//	          mutate, apply the mutation, render again, judge (check, audit).
//
// Data flows one way: webhook or check -> pipeline -> render, quota, engine ->
// Evaluation. Nothing here knows about HTTP or AdmissionReviews.
package pipeline
