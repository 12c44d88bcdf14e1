package pipeline

import corev1 "k8s.io/api/core/v1"

// ExemptLabel takes a whole namespace out of mpiguard's admission when an
// admin sets it to "true". config/webhook's namespaceSelector keeps the
// webhooks away from such a namespace; the pipeline treats its TrainJobs as
// ungoverned too, so that audit, the Kueue AdmissionCheck and `mpiguard
// check` say what admission does: nothing.
const ExemptLabel = "mpiguard.io/exempt"

// Exempt says whether ns carries ExemptLabel=true.
func Exempt(ns *corev1.Namespace) bool {
	return ns != nil && ns.Labels[ExemptLabel] == "true"
}
