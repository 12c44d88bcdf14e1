package networkpolicies

import "fmt"

// Template names the shape of the NetworkPolicy written for an MPI TrainJob.
type Template string

const (
	// TemplateIngressIsolated lets only the job's own pods (and the sources the
	// extra ingress names: monitoring, an ingress controller for TensorBoard)
	// reach the job's pods, on every port; egress is not restricted, so the job
	// reaches its data (object storage, registries, the Kubernetes API). The
	// default: isolation between namespaces while MPI flows inside the job.
	TemplateIngressIsolated Template = "ingress-isolated"
	// TemplateJobIsolated is the strict template: ingress as ingress-isolated,
	// and egress only to the job's own pods, cluster DNS and the extra egress.
	// For regulated namespaces; every outside destination must be listed.
	TemplateJobIsolated Template = "job-isolated"
	// TemplateRestricted allows the Launcher to reach Workers on the sshd port and
	// the job's pods to reach each other on one fixed port range, plus DNS and the
	// extra egress. The MPI library must be told to use that range (see
	// docs/networkpolicies.md).
	TemplateRestricted Template = "restricted"
	// TemplateOff writes no policy and deletes one this controller wrote before.
	TemplateOff Template = "off"
)

// DefaultTemplate is the template of a job whose namespace and runtime choose
// none, unless the controller's flag says otherwise.
const DefaultTemplate = TemplateIngressIsolated

// Templates lists the valid templates in the order the docs present them.
var Templates = []Template{TemplateIngressIsolated, TemplateJobIsolated, TemplateRestricted, TemplateOff}

// ParseTemplate accepts exactly the documented template names.
func ParseTemplate(s string) (Template, error) {
	for _, t := range Templates {
		if s == string(t) {
			return t, nil
		}
	}
	return "", fmt.Errorf("%q is not a network policy template; use one of %q, %q, %q or %q",
		s, TemplateIngressIsolated, TemplateJobIsolated, TemplateRestricted, TemplateOff)
}
