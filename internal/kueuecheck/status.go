package kueuecheck

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// setState applies out as the state of each of checks on the Workload:
// server-side apply of mpiguard's own entries of status.admissionChecks (a
// list keyed by name, so other checks' states are untouched), carrying the
// resourceVersion read, so a Workload that changed since (evicted, its
// quota released) is not answered on a stale read. lastTransitionTime moves
// only when the state does, as Kueue's workload.SetAdmissionCheckState
// keeps it (that package cannot be linked: see placements).
func (r *Reconciler) setState(ctx context.Context, wl *kueue.Workload, checks []ownCheck, out CheckState) error {
	now := metav1.NewTime(r.clock.Now())
	states := make([]any, 0, len(checks))
	for _, c := range checks {
		since := now
		if c.state == out.State && !c.since.IsZero() {
			since = c.since
		}
		s := map[string]any{"name": string(c.name), "state": string(out.State), "message": out.Message, "lastTransitionTime": since.UTC().Format(time.RFC3339)}
		if out.State == kueue.CheckStateRetry {
			s["requeueAfterSeconds"] = int64(requeueAfter(c.retryCount, r.opts.RetryBackoff, r.opts.MaxRetryBackoff) / time.Second)
		}
		states = append(states, s)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kueue.GroupVersion.String(),
		"kind":       "Workload",
		"metadata":   map[string]any{"name": wl.Name, "namespace": wl.Namespace, "resourceVersion": wl.ResourceVersion},
		"status":     map[string]any{"admissionChecks": states},
	}}
	return r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// activeReconciler marks mpiguard's AdmissionChecks Active: Kueue treats a
// ClusterQueue whose checks are not all active as inactive and admits
// nothing through it.
type activeReconciler struct {
	client client.Client
	now    func() time.Time
}

func (a *activeReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ac := &kueue.AdmissionCheck{}
	if err := a.client.Get(ctx, req.NamespacedName, ac); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ac.Spec.ControllerName != ControllerName {
		return reconcile.Result{}, nil
	}
	if c := meta.FindStatusCondition(ac.Status.Conditions, kueue.AdmissionCheckActive); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == ac.Generation {
		return reconcile.Result{}, nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kueue.GroupVersion.String(),
		"kind":       "AdmissionCheck",
		"metadata":   map[string]any{"name": ac.Name},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type":               kueue.AdmissionCheckActive,
			"status":             string(metav1.ConditionTrue),
			"reason":             "Active",
			"message":            "mpiguard judges the Workloads of MPI TrainJobs with its admission policies",
			"observedGeneration": ac.Generation,
			"lastTransitionTime": metav1.NewTime(a.now()).UTC().Format(time.RFC3339),
		}}},
	}}
	return reconcile.Result{}, a.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
}
