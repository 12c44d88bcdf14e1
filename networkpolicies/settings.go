package networkpolicies

import (
	"fmt"
)

// Annotations that choose and tune the policy. They are read from the TrainJob's
// Namespace and from its (Cluster)TrainingRuntime, never from the TrainJob: the
// person who submits a job must not be able to open the network for it.
const (
	// AnnotationTemplate chooses ingress-isolated, job-isolated, restricted or off.
	AnnotationTemplate = "mpiguard.io/network-policy"
	// AnnotationSSHPort is the sshd port of the runtime's image (restricted only).
	AnnotationSSHPort = "mpiguard.io/network-policy-ssh-port"
	// AnnotationWorkerPorts is "N" or "N-M", the range MPI is pinned to (restricted only).
	AnnotationWorkerPorts = "mpiguard.io/network-policy-worker-ports"
	// AnnotationExtraEgress adds destinations in ParseEgress syntax (the
	// templates that isolate egress: job-isolated, restricted).
	AnnotationExtraEgress = "mpiguard.io/network-policy-extra-egress"
	// AnnotationExtraIngress adds sources in ParseIngress syntax (every template).
	AnnotationExtraIngress = "mpiguard.io/network-policy-extra-ingress"
)

// ourAnnotations are the keys whose change on a Namespace or runtime re-renders policies.
var ourAnnotations = []string{AnnotationTemplate, AnnotationSSHPort, AnnotationWorkerPorts, AnnotationExtraEgress, AnnotationExtraIngress}

// Settings are the resolved inputs of one job's policy.
type Settings struct {
	Template Template
	// TemplateFrom says who chose the template, for events: `Namespace "team-a"`,
	// `ClusterTrainingRuntime "mpi"` or "controller default".
	TemplateFrom string
	SSHPort      int32
	WorkerPorts  PortRange
	ExtraEgress  []EgressRule
	ExtraIngress []IngressSource
}

// annotated is one place settings can come from.
type annotated struct {
	// what names the object for messages, e.g. `Namespace "team-a"`.
	what        string
	annotations map[string]string
	// sshPort is the sshd port the runtime's template shows (templateSSHPort);
	// 0 for a Namespace or a template that shows none.
	sshPort int32
}

func (a annotated) get(key string) (string, bool) {
	v, ok := a.annotations[key]
	return v, ok
}

// resolveSettings merges controller options, the runtime's and the namespace's
// annotations. Precedence, and why:
//
//   - template: Namespace, then runtime, then controller default. Isolating a
//     tenant is the namespace owner's (cluster admin's) decision; a runtime only
//     says what its image needs where the namespace has no opinion.
//   - sshd port and worker ports: runtime, then Namespace, then controller
//     default. They describe what the runtime's image listens on. For the sshd
//     port the runtime's annotation comes first, then the port its template
//     shows (a port named ssh/sshd or the Worker's readiness probe).
//   - extra egress and extra ingress: the union of controller flag, runtime and
//     Namespace; every entry is an allow rule, so adding sources only adds
//     destinations (sources).
//
// A value that does not parse is reported (the caller turns each problem into a
// Warning event) and never widens access: a bad template falls back to the
// controller default (not to the next source, which might be "off"), a bad port to
// the next source, a bad egress entry is dropped.
func resolveSettings(opts Options, ns, rt annotated) (Settings, []error) {
	var problems []error
	s := Settings{
		Template:     opts.DefaultTemplate,
		TemplateFrom: "controller default",
		SSHPort:      opts.SSHPort,
		WorkerPorts:  opts.WorkerPorts,
	}

	for _, src := range []annotated{ns, rt} {
		v, ok := src.get(AnnotationTemplate)
		if !ok {
			continue
		}
		t, err := ParseTemplate(v)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s annotation %s: %w; using the controller default %q until it is fixed",
				src.what, AnnotationTemplate, err, opts.DefaultTemplate))
			break
		}
		s.Template, s.TemplateFrom = t, src.what
		break
	}

	for _, src := range []annotated{rt, ns} {
		v, ok := src.get(AnnotationSSHPort)
		if !ok {
			if src.sshPort != 0 {
				s.SSHPort = src.sshPort
				break
			}
			continue
		}
		p, err := ParsePort(v)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s annotation %s: %w; ignoring it", src.what, AnnotationSSHPort, err))
			if src.sshPort != 0 {
				s.SSHPort = src.sshPort
				break
			}
			continue
		}
		s.SSHPort = p
		break
	}

	for _, src := range []annotated{rt, ns} {
		v, ok := src.get(AnnotationWorkerPorts)
		if !ok {
			continue
		}
		r, err := ParsePortRange(v)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s annotation %s: %w; ignoring it", src.what, AnnotationWorkerPorts, err))
			continue
		}
		s.WorkerPorts = r
		break
	}

	var bad []error
	s.ExtraEgress, bad = unionOf(opts.ExtraEgress, AnnotationExtraEgress, ParseEgress, rt, ns)
	problems = append(problems, bad...)
	s.ExtraIngress, bad = unionOf(opts.ExtraIngress, AnnotationExtraIngress, ParseIngress, rt, ns)
	problems = append(problems, bad...)
	return s, problems
}

// unionOf is base followed by the entries annotation key lists on each source,
// in order, without repeats. A source's bad entries are reported and left out.
func unionOf[T fmt.Stringer](base []T, key string, parse func(string) ([]T, error), sources ...annotated) ([]T, []error) {
	lists := [][]T{base}
	var problems []error
	for _, src := range sources {
		v, ok := src.get(key)
		if !ok {
			continue
		}
		list, err := parse(v)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s annotation %s: %w; those entries are not allowed until fixed", src.what, key, err))
		}
		lists = append(lists, list)
	}
	return mergeUnique(lists...), problems
}
