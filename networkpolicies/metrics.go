package networkpolicies

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Actions counted by PolicyChanges and named in the TrainJob's events.
const (
	ActionCreated  = "created"  // first policy for a job
	ActionUpdated  = "updated"  // inputs changed (template, ports, egress)
	ActionRepaired = "repaired" // someone deleted or edited the policy; restored
	ActionDeleted  = "deleted"  // template switched to off, or the job stopped being MPI
)

// Reasons counted by PolicySkipped.
const (
	SkipConflict        = "conflict"          // a NetworkPolicy of that name belongs to someone else
	SkipRuntimeNotFound = "runtime_not_found" // cannot tell whether the job is MPI
)

var (
	// PolicyChanges counts writes to NetworkPolicies by action.
	PolicyChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mpiguard_networkpolicy_changes_total",
		Help: "NetworkPolicies written for MPI TrainJobs, by action: created, updated, repaired (restored after a deletion or edit by someone else), deleted.",
	}, []string{"action"})

	// PolicySkipped counts reconciles that left an MPI job without the policy it
	// should have; a job stuck in conflict adds one per reconcile.
	PolicySkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mpiguard_networkpolicy_skipped_total",
		Help: "Reconciles that left a TrainJob without the NetworkPolicy it should have, by reason: conflict (name taken by a policy mpiguard does not own), runtime_not_found (cannot tell whether the job is MPI).",
	}, []string{"reason"})
)

func init() {
	metrics.Registry.MustRegister(PolicyChanges, PolicySkipped)
	// Pre-create every series so dashboards see zeros instead of gaps.
	for _, a := range []string{ActionCreated, ActionUpdated, ActionRepaired, ActionDeleted} {
		PolicyChanges.WithLabelValues(a)
	}
	for _, r := range []string{SkipConflict, SkipRuntimeNotFound} {
		PolicySkipped.WithLabelValues(r)
	}
}
