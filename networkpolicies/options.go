package networkpolicies

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Defaults used when neither the namespace nor the runtime says otherwise.
const (
	// DefaultSSHPort is where sshd listens in the Trainer's upstream MPI images
	// (the readiness probe of manifests/base/runtimes/deepspeed_distributed.yaml).
	DefaultSSHPort int32 = 2222
	// DefaultDNSNamespace and the kube-dns label are what kubeadm, kind, GKE, EKS
	// and AKS use for cluster DNS (CoreDNS keeps the k8s-app=kube-dns label).
	DefaultDNSNamespace = "kube-system"
	// DefaultDNSPort is where those DNS pods listen. OpenShift's listen on 5353
	// behind a Service on 53 (docs/networkpolicies.md, "DNS").
	DefaultDNSPort int32 = 53
)

// DefaultWorkerPorts is the range the restricted template opens between the job's
// pods. MPI must be pinned to it (OpenMPI btl_tcp_port_min_v4/btl_tcp_port_range_v4
// and oob_tcp_dynamic_ipv4_ports, Intel MPI I_MPI_PORT_RANGE, MPICH
// MPIR_CVAR_CH3_PORT_RANGE); docs/networkpolicies.md shows how.
var DefaultWorkerPorts = PortRange{Start: 50000, End: 50999}

// DefaultDNSPodLabels select the cluster DNS pods inside DNSNamespace.
func DefaultDNSPodLabels() map[string]string { return map[string]string{"k8s-app": "kube-dns"} }

// Options configure the controller. Apart from Enabled, every empty field takes
// the default above.
type Options struct {
	// Enabled runs the controller. When false, policies already written stay as
	// they are (neither repaired nor removed); their owner references still let
	// the garbage collector remove them with their TrainJobs.
	Enabled bool
	// DefaultTemplate applies when neither namespace nor runtime chooses one.
	DefaultTemplate Template
	// SSHPort is the sshd port the restricted template opens from the Launcher.
	SSHPort int32
	// WorkerPorts is the range the restricted template opens between the job's pods.
	WorkerPorts PortRange
	// ExtraEgress is added to every policy that isolates egress (job-isolated,
	// restricted), e.g. the cluster's image registry or object store, in
	// ParseEgress syntax.
	ExtraEgress []EgressRule
	// ExtraIngress is added to every policy, e.g. the monitoring namespace's
	// Prometheus, in ParseIngress syntax.
	ExtraIngress []IngressSource
	// DNSNamespace and DNSPodLabels select the cluster DNS pods that every policy
	// lets the job reach on UDP and TCP DNSPorts.
	DNSNamespace string
	DNSPodLabels map[string]string
	// DNSPorts are the ports the DNS pods listen on, each opened on UDP and TCP.
	// They are the pods' ports, not the DNS Service's: a NetworkPolicy rule that
	// names pods matches the traffic after the Service address was translated.
	DNSPorts []int32
	// MaxConcurrentReconciles bounds parallel reconciles; 0 means 4.
	MaxConcurrentReconciles int
}

// DefaultOptions runs the controller with every default.
func DefaultOptions() Options { return Options{Enabled: true} }

// withDefaults fills every empty field; callers keep their Options untouched.
func (o Options) withDefaults() Options {
	if o.DefaultTemplate == "" {
		o.DefaultTemplate = DefaultTemplate
	}
	if o.SSHPort == 0 {
		o.SSHPort = DefaultSSHPort
	}
	if o.WorkerPorts.Start == 0 {
		o.WorkerPorts = DefaultWorkerPorts
	}
	if o.DNSNamespace == "" {
		o.DNSNamespace = DefaultDNSNamespace
	}
	if len(o.DNSPodLabels) == 0 {
		o.DNSPodLabels = DefaultDNSPodLabels()
	}
	if len(o.DNSPorts) == 0 {
		o.DNSPorts = []int32{DefaultDNSPort}
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = 4
	}
	return o
}

// Validate rejects options that would make every policy wrong, at start-up
// rather than per job. Empty fields are valid (they take the defaults).
func (o Options) Validate() error {
	return o.withDefaults().validate()
}

func (o Options) validate() error {
	if _, err := ParseTemplate(string(o.DefaultTemplate)); err != nil {
		return fmt.Errorf("networkpolicies: default template: %w", err)
	}
	if o.SSHPort < 1 || o.SSHPort > 65535 {
		return fmt.Errorf("networkpolicies: sshd port %d is outside 1-65535", o.SSHPort)
	}
	if o.WorkerPorts.Start < 1 || o.WorkerPorts.Start > 65535 || o.WorkerPorts.End > 65535 ||
		(o.WorkerPorts.End != 0 && o.WorkerPorts.End < o.WorkerPorts.Start) {
		return fmt.Errorf("networkpolicies: worker port range %s is not within 1-65535 low-high", o.WorkerPorts)
	}
	if err := validateDNS(o.DNSNamespace, o.DNSPodLabels, o.DNSPorts); err != nil {
		return fmt.Errorf("networkpolicies: DNS: %w", err)
	}
	if o.MaxConcurrentReconciles < 0 {
		return fmt.Errorf("networkpolicies: MaxConcurrentReconciles %d is negative", o.MaxConcurrentReconciles)
	}
	return nil
}

// AddFlags binds the controller's flags, all prefixed "network-policy".
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, "network-policies", o.Enabled,
		"Keep one NetworkPolicy per MPI TrainJob, selecting only that job's pods, and repair edits and deletions of it.")
	fs.Func("network-policy-default-template",
		fmt.Sprintf("template for MPI TrainJobs whose namespace and runtime choose none: %s, %s (egress isolated too), %s or %s (default %s)",
			TemplateIngressIsolated, TemplateJobIsolated, TemplateRestricted, TemplateOff, DefaultTemplate),
		func(s string) error {
			t, err := ParseTemplate(s)
			o.DefaultTemplate = t
			return err
		})
	fs.Func("network-policy-ssh-port",
		fmt.Sprintf("sshd port the restricted template opens from the Launcher to Workers (default %d)", DefaultSSHPort),
		func(s string) error {
			p, err := ParsePort(s)
			o.SSHPort = p
			return err
		})
	fs.Func("network-policy-worker-ports",
		fmt.Sprintf("port or low-high range the restricted template opens between a job's pods (default %s)", DefaultWorkerPorts),
		func(s string) error {
			r, err := ParsePortRange(s)
			o.WorkerPorts = r
			return err
		})
	fs.Func("network-policy-extra-egress",
		"comma-separated CIDR[:port[-endPort]][/TCP|UDP|SCTP] every MPI job may reach under the templates that isolate egress (job-isolated, restricted); repeatable",
		func(s string) error {
			rules, err := ParseEgress(s)
			o.ExtraEgress = append(o.ExtraEgress, rules...)
			return err
		})
	fs.Func("network-policy-extra-ingress",
		"comma-separated NAMESPACE[/key=value][:port[-endPort]] sources that may reach every MPI job's pods (monitoring, an ingress for TensorBoard); repeatable",
		func(s string) error {
			list, err := ParseIngress(s)
			o.ExtraIngress = append(o.ExtraIngress, list...)
			return err
		})
	fs.Func("network-policy-dns",
		fmt.Sprintf("cluster DNS pods as namespace/key=value[,key=value] (default %s/k8s-app=kube-dns; "+
			"OpenShift: openshift-dns/dns.operator.openshift.io/daemonset-dns=default)", DefaultDNSNamespace),
		func(s string) error {
			ns, labels, err := ParseDNSPods(s)
			o.DNSNamespace, o.DNSPodLabels = ns, labels
			return err
		})
	fs.Func("network-policy-dns-ports",
		fmt.Sprintf("comma-separated ports the cluster DNS pods listen on, each opened on UDP and TCP (default %d; OpenShift: 5353)", DefaultDNSPort),
		func(s string) error {
			ports, err := ParsePorts(s)
			o.DNSPorts = ports
			return err
		})
}
