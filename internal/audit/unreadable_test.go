package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/render"
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

// What a tenant may not read is read as absent, and said: the Namespace as
// one without labels, the runtime snapshot as none, Nodes and
// ServiceAccounts as none listed. Every other forbidden read, and every
// other error, still fails: judging without the quotas would contradict
// admission.
func TestSkipForbiddenReadsWhatATenantMayNotAsAbsent(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	deny := func(obj any) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: fmt.Sprintf("%T", obj)}, "", nil)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			return deny(obj)
		},
		List: func(_ context.Context, _ client.WithWatch, list client.ObjectList, _ ...client.ListOption) error {
			return deny(list)
		},
	}).Build()
	reads := &SkipForbidden{Reader: c}
	ctx := context.Background()

	ns := &corev1.Namespace{}
	if err := reads.Get(ctx, client.ObjectKey{Name: "team-a"}, ns); err != nil || ns.Name != "team-a" || len(ns.Labels) != 0 {
		t.Errorf("forbidden Namespace: %v, %+v; want team-a without labels", err, ns.ObjectMeta)
	}
	snapshot := &corev1.ConfigMap{}
	if err := reads.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "job" + render.SnapshotSuffix}, snapshot); !apierrors.IsNotFound(err) {
		t.Errorf("forbidden runtime snapshot: %v, want NotFound (judged against the runtime)", err)
	}
	if err := reads.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "other"}, &corev1.ConfigMap{}); !apierrors.IsForbidden(err) {
		t.Errorf("forbidden ConfigMap that is no snapshot: %v, want Forbidden", err)
	}
	if err := reads.List(ctx, &corev1.NodeList{}); err != nil {
		t.Errorf("forbidden Nodes: %v, want none listed", err)
	}
	accounts := &metav1.PartialObjectMetadataList{}
	accounts.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccountList"))
	if err := reads.List(ctx, accounts); err != nil {
		t.Errorf("forbidden ServiceAccounts: %v, want none listed", err)
	}
	if err := reads.List(ctx, &corev1.ResourceQuotaList{}); !apierrors.IsForbidden(err) {
		t.Errorf("forbidden ResourceQuotas: %v, want Forbidden", err)
	}
	note := reads.Note()
	for _, want := range []string{`Namespace "team-a"`, "runtime snapshot", "Nodes", "ServiceAccounts"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q does not say %q", note, want)
		}
	}
	if strings.Contains(note, "ResourceQuota") {
		t.Errorf("note %q names what was not skipped", note)
	}

	unavailable := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return apierrors.NewServiceUnavailable("etcd is down")
		},
	}).Build()
	if err := (&SkipForbidden{Reader: unavailable}).Get(ctx, client.ObjectKey{Name: "team-a"}, &corev1.Namespace{}); err == nil {
		t.Error("an unavailable apiserver read as a Namespace without labels; only a forbidden one may be")
	}
}
