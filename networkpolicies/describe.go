package networkpolicies

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Description is the template an MPI TrainJob gets and, in one line, what its
// policy leaves closed: what `mpiguard check` prints and the admission warning
// of a create says. It is resolved as the controller resolves it, from the
// same annotations and options.
type Description struct {
	Template Template
	// From says who chose the template: `Namespace "team-a"`,
	// `ClusterTrainingRuntime "mpi"` or "controller default".
	From string
	// Closed is what the job's pods cannot reach and what cannot reach them.
	Closed string
}

// String is the one line people read, e.g.
// `network policy "ingress-isolated" (controller default): ...`.
func (d Description) String() string {
	return fmt.Sprintf("network policy %q (%s): %s", d.Template, d.From, d.Closed)
}

// Describe says which template a job in namespace ns on runtime rt (a
// ClusterTrainingRuntime or TrainingRuntime) gets under opts, and what that
// leaves closed. ns may be nil (a namespace without annotations). It reads
// nothing: a pure function of its arguments. A bad annotation is described as
// the controller treats it (the default template, the entry left out).
func Describe(opts Options, ns *corev1.Namespace, rt client.Object) Description {
	opts = opts.withDefaults()
	nsSource := annotated{what: "Namespace"}
	if ns != nil {
		nsSource = annotated{what: fmt.Sprintf("Namespace %q", ns.Name), annotations: ns.Annotations}
	}
	s, _ := resolveSettings(opts, nsSource, runtimeSource(rt))
	return Description{Template: s.Template, From: s.TemplateFrom, Closed: closed(s, opts)}
}

func closed(s Settings, opts Options) string {
	inbound := "no pod outside the job can connect to its Launcher and Workers"
	if len(s.ExtraIngress) > 0 {
		inbound = "no pod outside the job can connect to its Launcher and Workers except from " + joinStrings(s.ExtraIngress)
	}
	outbound := "its pods cannot connect outside the job except to cluster DNS (" + dnsTarget(opts) + ")"
	if len(s.ExtraEgress) > 0 {
		outbound += " and " + joinStrings(s.ExtraEgress)
	}
	outbound += ": object storage, registries and the Kubernetes API need " + AnnotationExtraEgress
	switch s.Template {
	case TemplateIngressIsolated:
		return inbound + "; its pods may connect anywhere the namespace's other policies allow"
	case TemplateJobIsolated:
		return inbound + "; " + outbound
	case TemplateRestricted:
		return fmt.Sprintf("%s; inside the job only the Launcher reaches sshd (TCP %d) and the job's pods reach each other on TCP %s only; %s",
			inbound, s.SSHPort, s.WorkerPorts, outbound)
	}
	return "mpiguard writes no NetworkPolicy: the job is as open as the namespace's other policies leave it"
}

func dnsTarget(opts Options) string {
	ports := make([]string, len(opts.DNSPorts))
	for i, p := range opts.DNSPorts {
		ports[i] = fmt.Sprint(p)
	}
	return opts.DNSNamespace + " port " + strings.Join(ports, ",")
}

func joinStrings[T fmt.Stringer](list []T) string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = x.String()
	}
	return strings.Join(out, ", ")
}
