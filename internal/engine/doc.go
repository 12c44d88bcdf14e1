// Package engine evaluates mpiguard's Rego policies over MPI TrainJobs. It has
// no webhook or HTTP code: the TrainJob webhooks and `mpiguard check` share it.
//
// # API summary (for the webhooks)
//
//	eng, err := engine.NewDefault(ctx, engine.Options{DecisionLog: w, Registerer: metrics.Registry})
//	// or engine.New(ctx, set, opts) with set from DefaultPolicySet / LoadPolicySet / PolicySet.Overlay
//
//	if !engine.Governs(runtime) { allow untouched }          // only runtimes with mlPolicy.mpi
//	doc, err := input.New(&input.Source{Operation: engine.Create|engine.Update, User, Groups, DryRun,
//		TrainJob, OldTrainJob, View /* render.JobView */, Namespace, Quotas, Reserved, Runtime})
//	req := &engine.Request{Input: doc}                       // internal/input: built once per job
//
//	m, err := eng.Mutations(ctx, req)   // mutating webhook: m.Apply(copy) reports a change
//	d, err := eng.Decide(ctx, req)      // validating webhook (logs one decision line; no mutations)
//	d.Allowed; d.Denials(); d.Warnings() // []Violation{Policy, Action, Field, Message}
//
//	err = eng.Load(ctx, set)            // hot reload; a *CompileError keeps the last good set
//	eng.Version(); eng.Policies(); eng.LastError()
//
// Any error from Mutations or Decide means the request could not be evaluated:
// reject it, never allow it. Source.Reservations must hold what quotas do not
// count yet (admitted TrainJobs without pods, in-flight submits); serialise
// decisions per namespace while computing it so concurrent submits cannot
// together overshoot a quota (Document.Against judges the same job
// against another quota state).
//
// # Policies
//
// A policy is a Rego v1 package mpiguard.policies.<name> ("-" in the name
// written "_") defining any of:
//
//	deny   contains {"field": "spec.trainer.numNodes", "msg": "..."}   // rejected (per enforcement)
//	warn   contains {"field": ..., "msg": ...}                          // admission warning
//	mutate contains {"target": "trainJob", "field": "spec.activeDeadlineSeconds", "value": 86400}
//	mutate contains {"target": "podTemplate", "replicatedJob": "node", "field": "metadata.labels", "key": k, "value": v}
//
// Pod template mutations are collected into one spec.runtimePatches entry with
// manager mpiguard.io/admission; spec.trainer is never touched. The input
// document (internal/input) and the parameters, checked against each
// policy's parameters.schema.yaml (schema.go), are described in
// docs/policies.md.
//
// The set is compiled once into prepared queries that name every policy's
// deny, warn and mutate rules, and its parameters into an OPA value; each
// job's input document is built once by the caller, outside the engine, and
// every evaluation of the job reads it. Enforcement (deny, warn, dryrun) and namespace exemptions
// come from the parameters and are applied in Go after evaluation; dryrun
// violations and mutations are logged only.
package engine
