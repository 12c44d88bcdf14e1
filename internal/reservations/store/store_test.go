package store

import (
	"context"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
)

func newFakeStore(t *testing.T) (*Store, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	return NewStore(c, c, c, "mpiguard-system"), c
}

// storeHolding is a store over a fake client whose namespace ns holds e,
// written as admission writes it.
func storeHolding(t *testing.T, ns string, e v1alpha1.ReservationEntry) (*Store, client.Client) {
	t.Helper()
	s, c := newFakeStore(t)
	empty, err := s.Get(context.Background(), ns, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), empty, recordOf(e)); err != nil {
		t.Fatal(err)
	}
	return s, c
}

// Two deciders that read the same state cannot both write: the second write
// carries a stale resourceVersion and conflicts.
func TestPutConflictsOnAStaleRead(t *testing.T) {
	ctx := context.Background()
	s, _ := newFakeStore(t)
	empty, err := s.Get(ctx, "team-a", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, empty, recordOf(entry("a", 1))); err != nil {
		t.Fatalf("first create: %v", err)
	}
	if err := s.Put(ctx, empty, recordOf(entry("b", 1))); !apierrors.IsAlreadyExists(err) || !Retryable(err) {
		t.Fatalf("a second create from the same empty read = %v, want AlreadyExists (retryable)", err)
	}
	read, err := s.Get(ctx, "team-a", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, read, recordOf(entry("b", 1))); err != nil {
		t.Fatalf("update from a fresh read: %v", err)
	}
	if err := s.Put(ctx, read, recordOf(entry("c", 1))); !apierrors.IsConflict(err) || !Retryable(err) {
		t.Fatalf("update from a stale read = %v, want a conflict (retryable)", err)
	}
	got, err := s.Get(ctx, "team-a", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Entries) != 2 || !Has(got, named("a")) || !Has(got, named("b")) {
		t.Errorf("entries = %+v, want a and b", got.Spec.Entries)
	}
}

// The process's own last write is used when the cache is older.
func TestGetPrefersOwnNewerWrite(t *testing.T) {
	ctx := context.Background()
	s, c := newFakeStore(t)
	stale := &v1alpha1.QuotaReservation{}
	stale.Namespace, stale.Name, stale.Spec.Namespace = "mpiguard-system", "team-a", "team-a"
	if err := c.Create(ctx, stale); err != nil {
		t.Fatal(err)
	}
	cacheCopy := stale.DeepCopy()
	s.cache = fixedReader{cacheCopy}
	if err := s.Put(ctx, stale, recordOf(entry("a", 1))); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "team-a", false)
	if err != nil {
		t.Fatal(err)
	}
	if !Has(got, named("a")) {
		t.Errorf("Get returned the cache's older copy (rv %s), not this process's write", got.ResourceVersion)
	}
}

func TestNewer(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"10", "9", true}, {"9", "10", false}, {"5", "5", false}, {"1", "", true}, {"", "1", false}, {"x", "1", false}} {
		if got := newer(tc.a, tc.b); got != tc.want {
			t.Errorf("newer(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// fixedReader always returns obj: a cache that lags.
type fixedReader struct{ obj *v1alpha1.QuotaReservation }

func (f fixedReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	f.obj.DeepCopyInto(obj.(*v1alpha1.QuotaReservation))
	return nil
}

func (f fixedReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// named is a TrainJob of that name without a UID (as entry writes them).
func named(name string) *trainer.TrainJob {
	return &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
