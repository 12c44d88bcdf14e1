package trainjob

import (
	"context"
	"errors"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reservations/admit"
)

// decideReserving decides a request that lets a job create pods (a create that
// is not suspended, a resume) through the quota reservation transaction
// (admit.Admitter): judged against what the namespace's quotas hold,
// and its reservation written before it is allowed.
func (v Validator) decideReserving(ctx context.Context, req admission.Request, r *pipeline.Request, prepared *pipeline.Evaluation) admission.Response {
	evaluation, err := v.reservations.Admit(ctx, admit.Request{Job: r, Prepared: prepared, ReviewUID: req.UID})
	var unavailable *admit.UnavailableError
	switch {
	case errors.As(err, &unavailable):
		return withReservation(withDefaultAudit(admission.Errored(http.StatusServiceUnavailable, err)), "unavailable")
	case err != nil:
		return *refused(err)
	}
	v.pipeline.Record(evaluation)
	resp := answer(evaluation)
	switch {
	case !resp.Allowed:
		return withReservation(resp, "refused")
	case r.DryRun:
		return withReservation(resp, "dry-run")
	}
	return withReservation(resp, "written")
}
