package trainjob

import (
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/pipeline"
)

// Audit annotations: every answer carries them, and the apiserver writes them
// into the audit event of the request, each key prefixed with the webhook's
// name (vtrainjob.mpiguard.io/verdict), so the cluster's audit trail shows
// mpiguard's reason beside the request. docs/operations.md ("mpiguard in the
// apiserver's audit log") lists them.
const (
	// AuditVerdict: allowed, denied, or refused (the request could not be
	// judged; the answer's message says why).
	AuditVerdict = "verdict"
	// AuditDenied and AuditWarned: the policies that denied or warned, comma-separated.
	AuditDenied = "denied-by"
	AuditWarned = "warned-by"
	// AuditReservation: of a request that starts pods, written (the quota
	// reservation was recorded), dry-run (judged, nothing written),
	// refused (denied, nothing written) or unavailable (retry).
	AuditReservation = "reservation"
	// AuditGoverned is "false" for a request mpiguard's policies do not
	// govern (not an MPI TrainJob, an exempt namespace, an update that
	// changes nothing the job runs).
	AuditGoverned = "governed"
	// AuditMutated: of the mutating webhook, whether it patched the job.
	AuditMutated = "mutated"
	// AuditPolicySet is the version of the policy set that decided.
	AuditPolicySet = "policy-set"
)

// maxAuditValue keeps each annotation short: audit events are written for
// every request and shipped as they are.
const maxAuditValue = 256

// withVerdict is resp carrying the audit annotations of verdict v.
func withVerdict(resp admission.Response, v *pipeline.Evaluation) admission.Response {
	a := map[string]string{AuditVerdict: verdictWord(resp.Allowed)}
	if v != nil && v.Decision != nil {
		a[AuditPolicySet] = v.Decision.PolicySetVersion
		if p := policiesOf(v.Decision.Denials()); p != "" {
			a[AuditDenied] = p
		}
		if p := policiesOf(v.Decision.Warnings()); p != "" {
			a[AuditWarned] = p
		}
	}
	resp.AuditAnnotations = a
	return resp
}

// withDefaultAudit gives an answer that carries no audit annotations yet
// (an ungoverned request, a refusal) the verdict.
func withDefaultAudit(resp admission.Response) admission.Response {
	if resp.AuditAnnotations != nil {
		return resp
	}
	resp.AuditAnnotations = map[string]string{AuditVerdict: verdictWord(resp.Allowed)}
	switch {
	case refusedAnswer(resp):
		resp.AuditAnnotations[AuditVerdict] = "refused"
	case resp.Allowed:
		resp.AuditAnnotations[AuditGoverned] = "false"
	}
	return resp
}

// refusedAnswer is an answer of refused() or an unavailable reservation: an
// error (admission.Errored sets no reason), not a policy's denial.
func refusedAnswer(resp admission.Response) bool {
	return !resp.Allowed && resp.Result != nil && resp.Result.Reason == ""
}

// withReservation adds what happened to the quota reservation of a request
// that starts pods.
func withReservation(resp admission.Response, state string) admission.Response {
	if resp.AuditAnnotations == nil {
		resp.AuditAnnotations = map[string]string{AuditVerdict: verdictWord(resp.Allowed)}
	}
	resp.AuditAnnotations[AuditReservation] = state
	return resp
}

func verdictWord(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "denied"
}

// policiesOf names the policies of vs once each, in order, cut to maxAuditValue.
func policiesOf(vs []engine.Violation) string {
	var names []string
	for _, v := range vs {
		if !slices.Contains(names, v.Policy) {
			names = append(names, v.Policy)
		}
	}
	return pipeline.Cut(strings.Join(names, ","), maxAuditValue, ",…")
}

// withMutated is the mutating webhook's answer to a governed job.
func withMutated(resp admission.Response, patched bool) admission.Response {
	resp.AuditAnnotations = map[string]string{AuditVerdict: "allowed", AuditMutated: strconv.FormatBool(patched)}
	return resp
}
