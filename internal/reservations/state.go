package reservations

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
)

// State is what a quota decision in one namespace reads: the namespace's
// ResourceQuotas, with status.used as the apiserver holds it, and what is held
// against them on top of status.used. The validating webhook decides with it
// (internal/reservations/transaction.go) and audit judges waiting jobs with it
// (internal/audit), so both report the same numbers.
type State struct {
	Quotas  []corev1.ResourceQuota
	Holders []quota.Holder
	// Uncounted is what of Quotas' status.used the leader found their
	// controller had not counted (spec.uncounted): included there, and
	// named in denials.
	Uncounted input.Uncounted
	// Unconfirmed counts the entries held on trust (Unconfirmed); read only
	// when ReadState is asked to.
	Unconfirmed int
}

// RenderStored renders a stored TrainJob of the namespace: what it will
// create. A nil view without an error says the job creates no pods (its
// runtime is gone).
type RenderStored func(ctx context.Context, job *trainer.TrainJob) (*render.JobView, error)

// ReadState reads, for the quota decisions of namespace ns, the
// ResourceQuotas (LiveQuotas, with what res records their status.used
// lacks of the pods that exist added to it) and what is held against them: every entry of
// res, and TrainJobs that will create pods but have no entry (admitted before
// mpiguard kept reservations, or while its webhook was bypassed), each less
// the pods that exist. cache lists pods and TrainJobs; live reads the quotas.
func ReadState(ctx context.Context, cache, live client.Reader, ns string, res *v1alpha1.QuotaReservation, renderStored RenderStored, countUnconfirmed bool) (State, error) {
	existing, err := ReadExisting(ctx, cache, ns, time.Now())
	if err != nil {
		return State{}, err
	}
	quotas, err := LiveQuotas(ctx, cache, live, ns)
	if err != nil {
		return State{}, err
	}
	// What a quota's count missed of the pods that exist, as the leader
	// found it (counted.go), is used as status.used is.
	uncounted := withUncounted(quotas, res)
	holders := Holders(res, existing)
	var jobs trainer.TrainJobList
	if err := cache.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		return State{}, fmt.Errorf("listing the TrainJobs of %q: %w", ns, err)
	}
	for i := range jobs.Items {
		other := &jobs.Items[i]
		if Has(res, other) || !StartsPods(other) {
			continue
		}
		view, err := renderStored(ctx, other)
		if err != nil {
			return State{}, &UnknownChargeError{Job: other, Err: err}
		}
		if view == nil {
			continue // creates no pods: holds nothing
		}
		if parts := quota.Missing(quota.PartsOf(view), existing.Of(other.Name, other.UID)); len(parts) > 0 {
			holders = append(holders, quota.Holder{TrainJob: ns + "/" + other.Name, UID: other.UID, Parts: parts})
		}
	}
	quota.ChargeAgainst(holders, quotas) // once for every decision judged against this state
	state := State{Quotas: quotas, Holders: holders, Uncounted: uncounted}
	if countUnconfirmed {
		state.Unconfirmed = Unconfirmed(res, jobs.Items)
	}
	return state, nil
}

// LiveQuotas reads the namespace's ResourceQuotas with their status.used as
// the apiserver holds it now: the cache names them, and each is read with a
// GET, which the apiserver serves from etcd. A LIST would be served from the
// apiserver's watch cache once it has caught up with etcd, which costs a
// consistent read up to the apiserver's progress-request period (100 ms) on
// every decision, which would bound every create through mpiguard from
// below by that period. A quota created since the cache last heard is
// missed, as it was when quotas were read from the cache alone. A quota the
// quota controller has not synced yet fails the read (NotSyncedError).
func LiveQuotas(ctx context.Context, cache, live client.Reader, ns string) ([]corev1.ResourceQuota, error) {
	var cached corev1.ResourceQuotaList
	if err := cache.List(ctx, &cached, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the ResourceQuotas of %q: %w", ns, err)
	}
	out := make([]corev1.ResourceQuota, 0, len(cached.Items))
	for i := range cached.Items {
		var q corev1.ResourceQuota
		err := live.Get(ctx, client.ObjectKeyFromObject(&cached.Items[i]), &q)
		switch {
		case apierrors.IsNotFound(err):
			continue // deleted since
		case err != nil:
			return nil, fmt.Errorf("reading ResourceQuota %s/%s: %w", ns, cached.Items[i].Name, err)
		}
		if err := synced(&q); err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// synced fails for a quota whose status does not count yet what it limits
// of pods or of objects jobs create: status.hard differs from spec.hard (created or changed, and the
// quota controller has not caught up), or status.used lacks a name. Its
// status.used cannot be trusted; the apiserver's own quota admission refuses
// pods in the same case ("status unknown for quota").
func synced(q *corev1.ResourceQuota) error {
	var stale []string
	for name, hard := range q.Spec.Hard {
		_, _, pods := quota.ChargedName(name)
		if _, objects := quota.ObjectCounted(name); !pods && !objects {
			continue
		}
		statusHard, ok := q.Status.Hard[name]
		if _, counted := q.Status.Used[name]; !ok || !counted || statusHard.Cmp(hard) != 0 {
			stale = append(stale, string(name))
		}
	}
	if len(stale) == 0 {
		return nil
	}
	slices.Sort(stale)
	return &NotSyncedError{Namespace: q.Namespace, Name: q.Name, Resources: stale}
}

// NotSyncedError is a ResourceQuota whose status the quota controller has not
// brought up to its spec yet: nothing is decided against it until it has.
type NotSyncedError struct {
	Namespace, Name string
	Resources       []string
}

func (e *NotSyncedError) Error() string {
	return fmt.Sprintf("ResourceQuota %s/%s is not synced yet: its status does not count %s as its spec limits them (the quota controller updates it within seconds of a change)",
		e.Namespace, e.Name, strings.Join(e.Resources, ", "))
}

// UnknownChargeError is a stored TrainJob that will create pods in the
// namespace but whose charge cannot be known: it neither renders nor has a
// JobSet to charge it from. No decision of the namespace that starts pods
// can be exact until it is fixed or gone, so they fail closed, naming it.
type UnknownChargeError struct {
	Job *trainer.TrainJob
	Err error
}

func (e *UnknownChargeError) Error() string {
	return fmt.Sprintf("rendering TrainJob %s, which holds quota in %q: %v", e.Job.Name, e.Job.Namespace, e.Err)
}

func (e *UnknownChargeError) Unwrap() error { return e.Err }
