package networkpolicies

import "fmt"

// Template names the shape of the NetworkPolicy written for an MPI TrainJob.
type Template string

const (
	// TemplateJobIsolated lets the job's pods talk to each other on every port
	// (OpenMPI Workers connect back to mpirun on dynamic ports), resolve names
	// through cluster DNS, and nothing else in or out. The default.
	TemplateJobIsolated Template = "job-isolated"
	// TemplateRestricted allows the Launcher to reach Workers on the sshd port and
	// the job's pods to reach each other on one fixed port range, plus DNS. The MPI
	// library must be told to use that range (see docs/networkpolicies.md).
	TemplateRestricted Template = "restricted"
	// TemplateOff writes no policy and deletes one this controller wrote before.
	TemplateOff Template = "off"
)

// Templates lists the valid templates in the order the docs present them.
var Templates = []Template{TemplateJobIsolated, TemplateRestricted, TemplateOff}

// ParseTemplate accepts exactly the documented template names.
func ParseTemplate(s string) (Template, error) {
	for _, t := range Templates {
		if s == string(t) {
			return t, nil
		}
	}
	return "", fmt.Errorf("%q is not a network policy template; use one of %q, %q or %q",
		s, TemplateJobIsolated, TemplateRestricted, TemplateOff)
}
