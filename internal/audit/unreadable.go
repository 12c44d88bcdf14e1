package audit

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
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
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
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
