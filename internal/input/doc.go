// Package input assembles the policy input document of one TrainJob: what
// the Rego policies read as `input` (docs/policies.md, "The policy input
// document"). It is built once per job, by the caller that judges the job
// (internal/pipeline, for the webhooks, the Kueue check, audit and `mpiguard
// check`), and handed to the engine (internal/engine), which compiles,
// evaluates and enforces:
//
//	doc, err := input.New(&input.Source{Operation: input.Create, TrainJob: job, View: view, Namespace: ns, Quotas: quotas, ...})
//	d, err := eng.Decide(ctx, &engine.Request{Input: doc})
//	// the same job against another quota state (a write lost to another replica):
//	again, err := doc.Against(input.NewQuotaState(quotas, reservations, uncounted))
//	d, err = eng.Decide(ctx, &engine.Request{Input: again})
//
// New does the work that depends on the job alone (its rendered pods under
// the namespace's Pod Security levels, the runtime's constraints, the OPA
// value of every part) once; what the engine adds per evaluation (the policy
// set's parameters, the findings about mpiguard's own runtime patch entry)
// is small.
package input
