package retire

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
)

// An admission that writes the namespace's QuotaReservation while the
// retirer decides (every admitted create does) makes the retirer's write
// conflict; the entries it decided to release are still released in the same
// reconcile, and the admission's new entry is kept. Before, the reconcile
// ended in the conflict and decided everything again after a backoff: under
// a stream of creates, entries of deleted jobs were never released.
func TestRetirerReleasesDespiteAConflictingAdmission(t *testing.T) {
	ctx := context.Background()
	scheme := retirerScheme(t)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	held := func(job string, uid types.UID, until time.Time) v1alpha1.ReservationEntry {
		e := entry(job, 1)
		e.UID, e.RequestUID, e.Operation = uid, "req-"+uid, v1alpha1.OperationCreate
		e.AdmittedAt, e.HoldUntil = metav1.NewTime(until.Add(-30*time.Second)), metav1.NewTime(until)
		return e
	}
	res := &v1alpha1.QuotaReservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mpiguard-system", Name: "team-a"},
		Spec: v1alpha1.QuotaReservationSpec{Namespace: "team-a", Entries: []v1alpha1.ReservationEntry{
			held("deleted", "uid-deleted", now.Add(-time.Minute)), // no TrainJob, past its grace: released
			held("waiting", "uid-waiting", now.Add(time.Minute)),  // within its grace: kept
		}},
	}
	admitted := held("admitted-meanwhile", "uid-new", now.Add(time.Minute))
	conflicts := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(res).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if _, ok := obj.(*v1alpha1.QuotaReservation); ok && conflicts == 0 {
				// An admission lands between the retirer's read and its write.
				conflicts++
				var cur v1alpha1.QuotaReservation
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &cur); err != nil {
					return err
				}
				cur.Spec.Entries = append(cur.Spec.Entries, admitted)
				if err := c.Update(ctx, &cur); err != nil {
					return err
				}
			}
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	r := &Reconciler{client: c, live: c, recorder: events.NewFakeRecorder(10), namespace: "mpiguard-system", now: func() time.Time { return now }, deleted: lru.New(deletedJobs)}

	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(res)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if conflicts != 1 {
		t.Fatalf("the admission's write did not happen (%d)", conflicts)
	}
	var got v1alpha1.QuotaReservation
	if err := c.Get(ctx, client.ObjectKeyFromObject(res), &got); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, e := range got.Spec.Entries {
		jobs = append(jobs, e.TrainJob)
	}
	if diff := cmp.Diff([]string{"waiting", "admitted-meanwhile"}, jobs); diff != "" {
		t.Errorf("entries after the reconcile (-want +got):\n%s", diff)
	}
}

// A QuotaReservation edited by hand is reconciled on every pod event of its
// namespace: the leader says once per version of the object that it cannot
// retire there (a Warning Event, a log line), not on every reconcile.
func TestRetirerReportsAnUnreadableObjectOncePerVersion(t *testing.T) {
	ctx := context.Background()
	scheme := retirerScheme(t)
	broken := entry("edited", 1)
	broken.Parts[1].Pods = -1
	res := &v1alpha1.QuotaReservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mpiguard-system", Name: "team-a"},
		Spec:       v1alpha1.QuotaReservationSpec{Namespace: "team-a", Entries: []v1alpha1.ReservationEntry{broken}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(res).Build()
	recorder := events.NewFakeRecorder(10)
	r := &Reconciler{client: c, live: c, recorder: recorder, namespace: "mpiguard-system", now: time.Now, deleted: lru.New(deletedJobs)}
	reconcileTimes := func(n int) {
		t.Helper()
		for range n {
			if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(res)}); err != nil {
				t.Fatalf("Reconcile: %v (nothing a retry mends)", err)
			}
		}
	}
	eventsSoFar := func() []string {
		var out []string
		for {
			select {
			case e := <-recorder.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}

	reconcileTimes(3)
	got := eventsSoFar()
	if len(got) != 1 || !strings.Contains(got[0], store.ReasonInvalidEntries) || !strings.Contains(got[0], "spec.entries[0].parts[1].pods") {
		t.Fatalf("events after 3 reconciles of one version: %q, want one %s naming the field", got, store.ReasonInvalidEntries)
	}

	var cur v1alpha1.QuotaReservation
	if err := c.Get(ctx, client.ObjectKeyFromObject(res), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Entries[0].Parts[1].Pods = -2 // edited again, still broken
	if err := c.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	reconcileTimes(2)
	if got := eventsSoFar(); len(got) != 1 {
		t.Errorf("events after the object changed: %q, want one more", got)
	}
}

// retirerScheme has the kinds the retirer reads.
func retirerScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, trainer.AddToScheme, jobsetv1alpha2.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}
