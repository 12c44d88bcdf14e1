package trainjob

import (
	"context"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/policies/engine"
	"github.com/mpiguard/mpiguard/policies/render"
)

// Ledger knows what a namespace's quotas will be charged but do not count yet:
// TrainJobs already admitted whose pods do not exist yet (not suspended, not
// finished), and submits this process admitted that the cache has not shown
// yet. Quota-relevant decisions in a namespace are serialised with Lock, so
// concurrent submits cannot together overshoot a quota.
type Ledger struct {
	reader client.Reader
	// ttl bounds how long an admitted submit is held when the cache never shows
	// it (its create failed after admission, e.g. another webhook denied it).
	ttl time.Duration
	now func() time.Time

	mu       sync.Mutex
	locks    map[string]*sync.Mutex
	inflight map[types.NamespacedName]inflight
}

type inflight struct {
	view    *render.JobView
	expires time.Time
}

// ViewFunc renders a stored TrainJob for the ledger. It is called for every
// pending job of the namespace on every quota decision, so it should cache.
type ViewFunc func(ctx context.Context, job *trainer.TrainJob) (*render.JobView, error)

// NewLedger returns a ledger reading TrainJobs and pods from reader.
func NewLedger(reader client.Reader, ttl time.Duration) *Ledger {
	return &Ledger{
		reader:   reader,
		ttl:      ttl,
		now:      time.Now,
		locks:    map[string]*sync.Mutex{},
		inflight: map[types.NamespacedName]inflight{},
	}
}

// Lock serialises quota decisions in a namespace; call the returned func to unlock.
func (l *Ledger) Lock(namespace string) func() {
	l.mu.Lock()
	m, ok := l.locks[namespace]
	if !ok {
		m = &sync.Mutex{}
		l.locks[namespace] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// Admitted records that job was admitted with view; its charge is reserved
// until the cache shows the TrainJob (then it counts as pending) or ttl passes.
// Call it with the namespace locked.
func (l *Ledger) Admitted(job *trainer.TrainJob, view *render.JobView) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight[types.NamespacedName{Namespace: job.Namespace, Name: job.Name}] = inflight{view: view, expires: l.now().Add(l.ttl)}
}

// Reserved lists what the namespace's quotas will be charged besides job itself;
// viewOf renders the namespace's pending TrainJobs. Call it with the namespace locked.
func (l *Ledger) Reserved(ctx context.Context, job *trainer.TrainJob, viewOf ViewFunc) ([]engine.Reservation, error) {
	var jobs trainer.TrainJobList
	if err := l.reader.List(ctx, &jobs, client.InNamespace(job.Namespace)); err != nil {
		return nil, err
	}
	var out []engine.Reservation
	known := make(map[string]bool, len(jobs.Items))
	for i := range jobs.Items {
		other := &jobs.Items[i]
		known[other.Name] = true
		if other.Name == job.Name || !pending(other) {
			continue
		}
		view, err := viewOf(ctx, other)
		if err != nil {
			// A job that cannot be rendered (its runtime was deleted) creates no
			// pods either: it reserves nothing.
			continue
		}
		remaining, err := l.remaining(ctx, other, view)
		if err != nil {
			return nil, err
		}
		if remaining != nil {
			out = append(out, engine.Reservation{TrainJob: other.Namespace + "/" + other.Name, View: remaining})
		}
	}
	return append(out, l.inflightReservations(job, known)...), nil
}

func (l *Ledger) inflightReservations(job *trainer.TrainJob, known map[string]bool) []engine.Reservation {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var out []engine.Reservation
	for key, f := range l.inflight {
		switch {
		case now.After(f.expires) || (key.Namespace == job.Namespace && known[key.Name]):
			// The cache shows it now (counted above) or it never got created.
			delete(l.inflight, key)
		case key.Namespace == job.Namespace && key.Name != job.Name:
			out = append(out, engine.Reservation{TrainJob: key.String(), View: f.view})
		}
	}
	return out
}

// pending says whether a TrainJob will still create pods: not suspended and not finished.
func pending(job *trainer.TrainJob) bool {
	if ptr.Deref(job.Spec.Suspend, false) || !job.DeletionTimestamp.IsZero() {
		return false
	}
	return !meta.IsStatusConditionTrue(job.Status.Conditions, trainer.TrainJobComplete) &&
		!meta.IsStatusConditionTrue(job.Status.Conditions, trainer.TrainJobFailed)
}

// remaining returns view reduced by the job's pods that already exist (quota's
// status.used counts those), or nil when every pod exists.
func (l *Ledger) remaining(ctx context.Context, job *trainer.TrainJob, view *render.JobView) (*render.JobView, error) {
	var pods corev1.PodList
	if err := l.reader.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: job.Name}); err != nil {
		return nil, err
	}
	existing := map[string]int32{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			existing[p.Labels[jobsetv1alpha2.ReplicatedJobNameKey]]++
		}
	}
	if len(existing) == 0 {
		return view, nil
	}
	reduced := *view
	reduced.ReplicatedJobs = append([]render.ReplicatedJobView(nil), view.ReplicatedJobs...)
	left := false
	for i := range reduced.ReplicatedJobs {
		rj := &reduced.ReplicatedJobs[i]
		rj.Pods = max(rj.Pods-existing[rj.Name], 0)
		left = left || rj.Pods > 0
	}
	if !left {
		return nil, nil
	}
	return &reduced, nil
}
