package audit

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/render"
)

// SkipUnreadable reads mpiguard's QuotaReservations and, where the user may
// not read them (a tenant: no shipped tenant role grants mpiguard's
// namespace), goes on without them, remembering which namespaces' it could
// not read: what admitted jobs hold there before their pods exist is then
// not counted, and the verdict may allow what admission would deny. `mpiguard
// check --from-cluster` and `mpiguard explain` read the ledger through it.
type SkipUnreadable struct {
	ReservationReader
	// Skipped lists, in order, the namespaces whose reservation was
	// unreadable, with why.
	Skipped []string
}

// Get reads namespace's reservation; a forbidden one reads as empty.
func (u *SkipUnreadable) Get(ctx context.Context, namespace string, live bool) (*v1alpha1.QuotaReservation, error) {
	res, err := u.ReservationReader.Get(ctx, namespace, live)
	if forbidden(err) {
		u.Skipped = append(u.Skipped, fmt.Sprintf("%s (%v)", namespace, err))
		return &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Namespace: namespace}}, nil
	}
	return res, err
}

// Note is what the user is told about the reservations that could not be
// read in mpiguardNS, empty when all were.
func (u *SkipUnreadable) Note(mpiguardNS string) string {
	if len(u.Skipped) == 0 {
		return ""
	}
	return fmt.Sprintf("note: could not read mpiguard's QuotaReservations in %q for namespace %s: what admitted jobs hold there before their pods exist is not counted, so a quota verdict may allow what admission denies (an admin can run the same command, or grant get on quotareservations.mpiguard.io in %q)",
		mpiguardNS, strings.Join(u.Skipped, ", "), mpiguardNS)
}

// SkipForbidden is the client.Reader of `mpiguard check --from-cluster` and
// `mpiguard explain` for a user who may not read every cluster-scoped kind a
// decision reads (a tenant: the shipped team roles grant no Namespaces, no
// Nodes and no ConfigMaps). A forbidden read of the job's Namespace reads as
// a namespace with no labels or annotations, as `check` judges a namespace
// it has no document for; a forbidden runtime snapshot as none, so the job
// is judged against its runtime; a forbidden list of Nodes or ServiceAccounts
// as empty, so the checks that need them are skipped. mpiguard's own
// clients may read all of these: in the webhooks a forbidden read stays an
// error (a broken install must not skip a check silently). Every other forbidden read stays an error:
// judging without the quotas, classes or runtime would say the opposite of
// what admission says. Skipped says, in order, what was not read and what
// the verdict lacks for it.
type SkipForbidden struct {
	client.Reader
	Skipped []string
}

// Get reads obj; a forbidden Namespace reads as one with only its name, a
// forbidden runtime snapshot ConfigMap as none.
func (s *SkipForbidden) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := s.Reader.Get(ctx, key, obj, opts...)
	if !forbidden(err) {
		return err
	}
	switch o := obj.(type) {
	case *corev1.Namespace:
		s.skip(fmt.Sprintf("Namespace %q: judged as if it had no labels or annotations, so a policy that reads them (residency, exemptions, the NetworkPolicy template) may judge otherwise than admission", key.Name))
		*o = corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: key.Name}}
		return nil
	case *corev1.ConfigMap:
		if strings.HasSuffix(key.Name, render.SnapshotSuffix) {
			s.skip(fmt.Sprintf("the runtime snapshot ConfigMap %s: judged against the job's runtime as it is now, not the copy of it the Trainer builds the job's pods from", key))
			return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
		}
	}
	return err
}

// List lists into list; a forbidden list of Nodes or of ServiceAccounts
// reads as empty, which the decision reads as not known: the node-capacity
// check, or the check that the pods' ServiceAccount exists, is skipped.
func (s *SkipForbidden) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := s.Reader.List(ctx, list, opts...)
	if !forbidden(err) {
		return err
	}
	switch l := list.(type) {
	case *corev1.NodeList:
		s.skip("Nodes: the node-capacity check (can a node hold each pod, can the gang fit) was skipped")
		l.Items = nil
		return nil
	case *metav1.PartialObjectMetadataList:
		if l.GroupVersionKind().Kind == "ServiceAccountList" {
			s.skip("ServiceAccounts: whether the ServiceAccount the pods name exists was not checked")
			l.Items = nil
			return nil
		}
	}
	return err
}

func (s *SkipForbidden) skip(what string) {
	for _, seen := range s.Skipped {
		if seen == what {
			return
		}
	}
	s.Skipped = append(s.Skipped, what)
}

// Note is what the user is told about what could not be read, empty when
// everything was.
func (s *SkipForbidden) Note() string {
	if len(s.Skipped) == 0 {
		return ""
	}
	return "note: you may not read " + strings.Join(s.Skipped, "; ") + " (an admin can run the same command, or bind you a role that reads them)"
}

func forbidden(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}
