package audit

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
)

// A tenant who may not read mpiguard's QuotaReservations still gets a
// verdict from check --from-cluster and explain: the ledger reads as empty and the note
// says which namespace's could not be read. Any other error still fails.
func TestUnreadableLedgerGoesOnWithoutIt(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	forbidden := func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*v1alpha1.QuotaReservation); ok {
			return apierrors.NewForbidden(schema.GroupResource{Group: "mpiguard.io", Resource: "quotareservations"}, key.Name, nil)
		}
		return c.Get(ctx, key, obj, opts...)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{Get: forbidden}).Build()
	ledger := &SkipUnreadable{ReservationReader: store.NewStore(c, c, nil, "mpiguard-system")}
	res, err := ledger.Get(context.Background(), "team-a", false)
	if err != nil {
		t.Fatalf("a forbidden ledger fails the check: %v", err)
	}
	if res.Spec.Namespace != "team-a" || len(res.Spec.Entries) != 0 {
		t.Errorf("forbidden ledger read as %+v, want an empty reservation of team-a", res.Spec)
	}
	note := ledger.Note("mpiguard-system")
	for _, want := range []string{`could not read mpiguard's QuotaReservations in "mpiguard-system"`, "team-a", "forbidden", "not counted"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q does not say %q", note, want)
		}
	}

	broken := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return apierrors.NewServiceUnavailable("etcd is down")
	}}).Build()
	ledger = &SkipUnreadable{ReservationReader: store.NewStore(broken, broken, nil, "mpiguard-system")}
	if _, err := ledger.Get(context.Background(), "team-a", false); err == nil {
		t.Error("an unavailable ledger is read as empty; only a forbidden one may be")
	}
	if ledger.Note("mpiguard-system") != "" {
		t.Error("a note for a ledger that was not skipped")
	}
}
