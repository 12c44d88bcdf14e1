package engine

import (
	"sort"
	"sync"
	"time"

	"github.com/mpiguard/mpiguard/policies/render"
)

// Ledger remembers the submits this process has admitted but the cluster does
// not show yet, per namespace, so that concurrent submits cannot together
// overshoot a ResourceQuota: decisions in one namespace are serialised (Lock)
// and each sees the reservations of the ones admitted before it (InFlight).
//
// An entry lives until the caller's cache shows the TrainJob (the settled
// callback of InFlight; from then on it counts as an admitted TrainJob), until
// Release, or until its time to live ends (the create failed after admission).
type Ledger struct {
	ttl time.Duration
	now func() time.Time

	mu         sync.Mutex
	namespaces map[string]*namespaceLedger
}

type namespaceLedger struct {
	lock     sync.Mutex // held across one decision in the namespace
	inflight map[string]inflightEntry
}

type inflightEntry struct {
	reservation Reservation
	expires     time.Time
}

// NewLedger returns a ledger whose entries expire after ttl (e.g. 30s, well
// above the webhook timeout plus the cache's delay).
func NewLedger(ttl time.Duration) *Ledger {
	return &Ledger{ttl: ttl, now: time.Now, namespaces: map[string]*namespaceLedger{}}
}

func (l *Ledger) namespace(ns string) *namespaceLedger {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, ok := l.namespaces[ns]
	if !ok {
		n = &namespaceLedger{inflight: map[string]inflightEntry{}}
		l.namespaces[ns] = n
	}
	return n
}

// Lock serialises quota decisions in namespace ns; call unlock when the
// decision is made and, if admitted, reserved.
func (l *Ledger) Lock(ns string) (unlock func()) {
	n := l.namespace(ns)
	n.lock.Lock()
	return n.lock.Unlock
}

// InFlight returns the namespace's live reservations, except the TrainJob
// named exclude (the one being decided) and those settled says the caller's
// cache already counts. Expired and settled entries are dropped. Call it
// while holding Lock(ns).
func (l *Ledger) InFlight(ns, exclude string, settled func(name string) bool) []Reservation {
	n := l.namespace(ns)
	now := l.now()
	names := make([]string, 0, len(n.inflight))
	for name, e := range n.inflight {
		if now.After(e.expires) || (settled != nil && settled(name)) {
			delete(n.inflight, name)
			continue
		}
		if name != exclude {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make([]Reservation, 0, len(names))
	for _, name := range names {
		out = append(out, n.inflight[name].reservation)
	}
	return out
}

// Reserve records that TrainJob ns/name with this view was just admitted.
// Call it while holding Lock(ns), only for allowed, non-dry-run decisions.
func (l *Ledger) Reserve(ns, name string, view *render.JobView) {
	n := l.namespace(ns)
	n.inflight[name] = inflightEntry{
		reservation: Reservation{TrainJob: ns + "/" + name, View: view},
		expires:     l.now().Add(l.ttl),
	}
}

// Release forgets a reservation (the TrainJob was deleted or its create failed).
func (l *Ledger) Release(ns, name string) {
	n := l.namespace(ns)
	n.lock.Lock()
	defer n.lock.Unlock()
	delete(n.inflight, name)
}
