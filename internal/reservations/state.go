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
	"github.com/mpiguard/mpiguard/internal/jobstate"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
)

// RenderStored renders a stored TrainJob of the namespace: what it will
// create. A nil view without an error says the job creates no pods (its
// runtime is gone).
type RenderStored func(ctx context.Context, job *trainer.TrainJob) (*render.JobView, error)

// ReadState reads the quota state the decisions of namespace ns are judged
// against: the ResourceQuotas (LiveQuotas, with what res records their status.used
// lacks of the pods that exist added to it) and what is held against them: every entry of
// res, and TrainJobs that will create pods but have no entry (admitted before
// mpiguard was installed, or while its webhook was bypassed), each less
// the pods that exist. cache lists pods and TrainJobs; live reads the quotas.
// The quota transaction decides with it (internal/reservations/admit) and
// audit judges waiting jobs with it (internal/audit), so both report the
// same numbers. With countUnconfirmed, it also counts the entries of res
// held on trust (Unconfirmed).
func ReadState(ctx context.Context, cache, live client.Reader, ns string, res *v1alpha1.QuotaReservation, renderStored RenderStored, countUnconfirmed bool) (state *input.QuotaState, unconfirmed int, err error) {
	existing, err := ReadExisting(ctx, cache, ns, time.Now())
	if err != nil {
		return nil, 0, err
	}
	quotas, err := LiveQuotas(ctx, cache, live, ns)
	if err != nil {
		return nil, 0, err
	}
	// What a quota's count missed of the pods that exist, as the leader
	// found it (counted.go), is used as status.used is.
	uncounted := withUncounted(quotas, res)
	reservations := Outstanding(res, existing)
	var jobs trainer.TrainJobList
	if err := cache.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		return nil, 0, fmt.Errorf("listing the TrainJobs of %q: %w", ns, err)
	}
	for i := range jobs.Items {
		other := &jobs.Items[i]
		if store.Has(res, other) || !jobstate.CreatesPods(other) {
			continue
		}
		view, err := renderStored(ctx, other)
		if err != nil {
			return nil, 0, &UnknownChargeError{Job: other, Err: err}
		}
		if view == nil {
			continue // creates no pods: holds nothing
		}
		if parts := quota.Missing(quota.PartsOf(view), existing.Of(other.Name, other.UID)); len(parts) > 0 {
			reservations = append(reservations, quota.Reservation{TrainJob: ns + "/" + other.Name, UID: other.UID, Parts: parts})
		}
	}
	quota.ChargeAgainst(reservations, quotas) // once for every decision judged against this state
	if countUnconfirmed {
		unconfirmed = Unconfirmed(res, jobs.Items)
	}
	return input.NewQuotaState(quotas, reservations, uncounted), unconfirmed, nil
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

// withUncounted adds to each quota's status.used what the QuotaReservation
// records it lacks (spec.uncounted), and returns what it added, by quota,
// for denials to say. quotas are the caller's own copies.
func withUncounted(quotas []corev1.ResourceQuota, res *v1alpha1.QuotaReservation) input.Uncounted {
	var added input.Uncounted
	for _, u := range res.Spec.Uncounted {
		i := slices.IndexFunc(quotas, func(q corev1.ResourceQuota) bool { return q.Name == u.ResourceQuota })
		if i < 0 {
			continue // deleted since
		}
		if added == nil {
			added = input.Uncounted{}
		}
		added[u.ResourceQuota] = u.Usage
		used := quotas[i].Status.Used.DeepCopy()
		if used == nil {
			used = corev1.ResourceList{}
		}
		for name, lacks := range u.Usage {
			total := used[name]
			total.Add(lacks)
			used[name] = total
		}
		quotas[i].Status.Used = used
	}
	return added
}
