// Package store is the quota ledger's storage: mpiguard's QuotaReservation
// objects, one per governed namespace, each entry the record of one
// reservation (the quota an admitted TrainJob holds while its pods do not
// all exist yet). It owns their encoding: the shape tables entries refer to
// by index (encoding.go), their validation on every read, which refuses a
// hand edit it cannot read (validate.go), and the writes, made with the
// resourceVersion read so that etcd serialises every replica's promises.
// Nothing else knows the encoding: readers get quota.Reservations
// (Reservations), writers give quota.Parts (Record).
package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/quota"
)

// Role in mpiguard's own namespace only (never cluster-wide): QuotaReservations
// live there.
// +kubebuilder:rbac:groups=mpiguard.io,resources=quotareservations,verbs=get;list;watch;create;update;delete,namespace=mpiguard-system

// MaxEntries is the most entries one QuotaReservation keeps: admitted jobs of
// one namespace whose pods do not all exist yet. An entry of a two-part job
// is about 600 bytes of JSON, so a full object stays near 600 KB, well under
// the 1.5 MiB etcd takes in one request by default. Admission refuses a
// request that would add one more, with "retry" (webhooks/trainjob).
const MaxEntries = 1000

// Store reads and writes the QuotaReservations in mpiguard's namespace.
type Store struct {
	// cache is the manager's cache (QuotaReservations of mpiguard's namespace).
	cache client.Reader
	// live reads the apiserver: after a conflict, and for what the cache may lag.
	live   client.Reader
	writer client.Writer
	// Namespace is mpiguard's own namespace, which holds the objects.
	Namespace string

	mu sync.Mutex
	// last is this process's own last successful write per governed namespace:
	// the cache may not show it yet, and deciding on an older copy would only
	// cost a conflict (the apiserver keeps the same memory of quotas it updated).
	last map[string]*v1alpha1.QuotaReservation
}

// NewStore returns a store over the given readers and writer.
func NewStore(cache, live client.Reader, writer client.Writer, namespace string) *Store {
	return &Store{
		cache: cache, live: live, writer: writer, Namespace: namespace,
		last: map[string]*v1alpha1.QuotaReservation{},
	}
}

// Get returns the QuotaReservation of a governed namespace, as stored: from
// the cache or this process's last write, whichever is newer, or from the
// apiserver when live. A namespace without one gets an empty object with no
// resourceVersion (Put then creates it). An object it cannot read (a hand
// edit) is an *InvalidError; Reservations reads what the entries hold.
func (s *Store) Get(ctx context.Context, namespace string, live bool) (*v1alpha1.QuotaReservation, error) {
	key := client.ObjectKey{Namespace: s.Namespace, Name: namespace}
	reader := s.cache
	if live {
		reader = s.live
	}
	got := &v1alpha1.QuotaReservation{}
	err := reader.Get(ctx, key, got)
	switch {
	case apierrors.IsNotFound(err):
		got = s.empty(namespace)
	case err != nil:
		return nil, fmt.Errorf("reading QuotaReservation %s: %w", key, err)
	}
	if !live {
		s.mu.Lock()
		if mine := s.last[namespace]; mine != nil && newer(mine.ResourceVersion, got.ResourceVersion) {
			got = mine.DeepCopy()
		}
		s.mu.Unlock()
	}
	if err := CheckReadable(got); err != nil {
		return nil, err
	}
	return got, nil
}

func (s *Store) empty(namespace string) *v1alpha1.QuotaReservation {
	return &v1alpha1.QuotaReservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: namespace},
		Spec:       v1alpha1.QuotaReservationSpec{Namespace: namespace},
	}
}

// newer says whether resourceVersion a is newer than b. etcd's resourceVersions
// are integers that only grow; the apiserver's quota admission compares them
// the same way (resource_access.go, checkCache). Anything else is not newer.
func newer(a, b string) bool {
	if b == "" {
		return a != ""
	}
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}

// Record is a reservation to write: its entry (Entry.Parts is not read) and
// what its pods and objects charge.
type Record struct {
	Entry v1alpha1.ReservationEntry
	Parts []quota.Part
}

// Put writes res as Get read it plus records (each replacing any entry of
// the same TrainJob: name and UID, SameJob): a create when res has no
// resourceVersion, else an update that carries the resourceVersion read, so
// it fails with a conflict when anyone wrote since (Retryable).
func (s *Store) Put(ctx context.Context, res *v1alpha1.QuotaReservation, records ...Record) error {
	all := make([]Record, 0, len(res.Spec.Entries)+len(records))
	for i := range res.Spec.Entries {
		e := &res.Spec.Entries[i]
		all = append(all, Record{Entry: *e, Parts: partsOf(res, e.Parts)})
	}
	for _, r := range records {
		all = append(withoutJob(all, r.Entry.TrainJob, r.Entry.UID), r)
	}
	out := res.DeepCopy()
	encode(out, all)
	var err error
	if out.ResourceVersion == "" {
		err = s.writer.Create(ctx, out)
	} else {
		err = s.writer.Update(ctx, out)
	}
	if err != nil {
		return err
	}
	s.remember(out)
	return nil
}

// remember keeps obj as this process's last write of its namespace.
func (s *Store) remember(obj *v1alpha1.QuotaReservation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mine := s.last[obj.Spec.Namespace]; mine == nil || !newer(mine.ResourceVersion, obj.ResourceVersion) {
		s.last[obj.Spec.Namespace] = obj.DeepCopy()
	}
}

// Retryable says whether a write failed only because someone wrote first: read
// live and decide again.
func Retryable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

func withoutJob(records []Record, job string, uid types.UID) []Record {
	out := records[:0:0]
	for i := range records {
		if !SameJob(&records[i].Entry, job, uid) {
			out = append(out, records[i])
		}
	}
	return out
}

// Has says whether res has an entry of job (its name and UID), which a new
// entry replaces. An entry of another UID was left by a create under the
// same name, and is another job.
func Has(res *v1alpha1.QuotaReservation, job *trainer.TrainJob) bool {
	return slices.ContainsFunc(res.Spec.Entries, func(e v1alpha1.ReservationEntry) bool { return SameJob(&e, job.Name, job.UID) })
}

// SameJob says whether entry e is of the TrainJob name with uid. An entry
// without a UID (none was known when it was written) is its name's.
func SameJob(e *v1alpha1.ReservationEntry, name string, uid types.UID) bool {
	return e.TrainJob == name && (e.UID == "" || e.UID == uid)
}
