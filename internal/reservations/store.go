// Package reservations keeps mpiguard's QuotaReservation objects: the store the
// TrainJob webhook reads and writes them through (with the apiserver's optimistic
// concurrency, so every replica's promises are serialised by etcd), and the
// controller that retires entries once the quota counts them or they will never
// be charged.
package reservations

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
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

// Format is the QuotaReservation layout (spec.format) this build writes and
// the newest it reads. Raise it with every field an older build would drop
// when it rewrites an object: its Go type does not have the field, so the
// decode loses it and the write stores the loss (a rolling upgrade runs old
// and new replicas side by side; with spec.objectShapes, an old replica's
// rewrite would have left entries charging no object counts; format 2 adds
// spec.uncounted). Builds since format 1 refuse an object of a newer format
// instead (NewerFormatError).
const Format = 2

// NewerFormatError says a QuotaReservation was written by a newer mpiguard
// than this replica: rewriting it would drop what this build does not know.
type NewerFormatError struct {
	Key    client.ObjectKey
	Format int32
}

func (e *NewerFormatError) Error() string {
	return fmt.Sprintf("QuotaReservation %s was written by a newer mpiguard (format %d; this replica knows %d), and rewriting it here would drop what this replica does not know; the newer replicas answer for this namespace once the upgrade is through",
		e.Key, e.Format, Format)
}

// checkFormat returns a *NewerFormatError when res is of a newer format than
// this build's.
func checkFormat(res *v1alpha1.QuotaReservation) error {
	if res.Spec.Format > Format {
		return &NewerFormatError{Key: client.ObjectKeyFromObject(res), Format: res.Spec.Format}
	}
	return nil
}

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

// Get returns the QuotaReservation of a governed namespace: from the cache or
// this process's last write, whichever is newer, or from the apiserver when
// live, with every part's pod shape inline. A namespace without one gets an empty object with no resourceVersion
// (put then creates it).
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
	if err := checkReadable(got); err != nil {
		return nil, err
	}
	expand(got) // every part inline for the readers (shapes.go)
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

// put writes res as read plus entries (each replacing any entry of the same
// TrainJob: name and UID, SameJob): a create when res has no resourceVersion, else an update that
// carries the resourceVersion read, so it fails with a conflict when anyone
// wrote since.
func (s *Store) put(ctx context.Context, res *v1alpha1.QuotaReservation, entries ...v1alpha1.ReservationEntry) error {
	out := res.DeepCopy()
	for _, e := range entries {
		// A copy: compact rewrites the parts, which the caller may still hold.
		out.Spec.Entries = append(withoutJob(out.Spec.Entries, e.TrainJob, e.UID), *e.DeepCopy())
	}
	compact(out)
	out.Spec.Format = Format
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

// retryable says whether a write failed only because someone wrote first: read
// live and decide again.
func retryable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

func withoutJob(entries []v1alpha1.ReservationEntry, job string, uid types.UID) []v1alpha1.ReservationEntry {
	out := entries[:0:0]
	for i := range entries {
		if e := entries[i]; !SameJob(&e, job, uid) {
			out = append(out, e)
		}
	}
	return out
}
