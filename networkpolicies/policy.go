package networkpolicies

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// namespaceNameLabel is set by the apiserver on every Namespace (since 1.22), so a
// namespaceSelector on it names exactly one namespace.
const namespaceNameLabel = corev1.LabelMetadataName

// desiredPolicy is the NetworkPolicy job should have under settings s, or nil for
// TemplateOff. It is a pure function of its inputs so that unit tests can pin the
// exact output and the controller can compare it with what is stored.
//
// Every selector that picks pods of the job includes jobset-name=<job>: the policy
// can never select, and so never isolate, a pod that is not this job's own.
func desiredPolicy(job *trainer.TrainJob, s Settings, opts Options) *networkingv1.NetworkPolicy {
	var spec networkingv1.NetworkPolicySpec
	switch s.Template {
	case TemplateIngressIsolated:
		spec = ingressIsolatedSpec(job.Name, s)
	case TemplateJobIsolated:
		spec = jobIsolatedSpec(job.Name, s, opts)
	case TemplateRestricted:
		spec = restrictedSpec(job.Name, s, opts)
	default:
		return nil
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      job.Name,
			Namespace: job.Namespace,
			Labels: map[string]string{
				ManagedByLabel: ManagedByValue,
				TemplateLabel:  string(s.Template),
			},
			OwnerReferences: []metav1.OwnerReference{ownerReference(job)},
		},
		Spec: spec,
	}
}

// ownerReference makes the TrainJob the policy's controller, so the garbage
// collector deletes the policy with the job and Owns() maps policy events back.
func ownerReference(job *trainer.TrainJob) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         trainer.GroupVersion.String(),
		Kind:               trainer.TrainJobKind,
		Name:               job.Name,
		UID:                job.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// ingressIsolatedSpec: in from the job's own pods on every port and from the
// extra ingress; egress is not part of the policy (policyTypes Ingress only), so
// the job reaches whatever the namespace's other policies let it reach.
func ingressIsolatedSpec(jobName string, s Settings) networkingv1.NetworkPolicySpec {
	return networkingv1.NetworkPolicySpec{
		PodSelector: *jobPods(jobName),
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress:     jobIngress(jobName, s),
	}
}

// jobIsolatedSpec: ingress as ingressIsolatedSpec; out to the job's own pods on
// every port, to DNS and to the extra egress only. No peer names another
// namespace except the DNS one and the extra ingress sources.
func jobIsolatedSpec(jobName string, s Settings, opts Options) networkingv1.NetworkPolicySpec {
	job := []networkingv1.NetworkPolicyPeer{{PodSelector: jobPods(jobName)}}
	return networkingv1.NetworkPolicySpec{
		PodSelector: *jobPods(jobName),
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		Ingress:     jobIngress(jobName, s),
		Egress: append([]networkingv1.NetworkPolicyEgressRule{
			{To: job},
			dnsRule(opts),
		}, extraEgressRules(s.ExtraEgress)...),
	}
}

// restrictedSpec: the Launcher may open SSH to the job's pods; the job's pods may
// reach each other on the worker range only. The range admits the Launcher too,
// because mpirun's out-of-band listener on the Launcher is what the Workers'
// daemons connect back to, and with runLauncherAsNode the Launcher is a Worker.
// One policy selects all the job's pods, so a rule cannot tell Launcher from Worker
// as destination: the Launcher's own sshd port is reachable from the Launcher.
func restrictedSpec(jobName string, s Settings, opts Options) networkingv1.NetworkPolicySpec {
	ssh := tcpPorts(PortRange{Start: s.SSHPort})
	workers := tcpPorts(s.WorkerPorts)
	job := []networkingv1.NetworkPolicyPeer{{PodSelector: jobPods(jobName)}}
	return networkingv1.NetworkPolicySpec{
		PodSelector: *jobPods(jobName),
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		Ingress: append([]networkingv1.NetworkPolicyIngressRule{
			{From: []networkingv1.NetworkPolicyPeer{{PodSelector: jobRolePods(jobName, launcherReplicatedJob)}}, Ports: ssh},
			{From: job, Ports: workers},
		}, extraIngressRules(s.ExtraIngress)...),
		Egress: append([]networkingv1.NetworkPolicyEgressRule{
			{To: job, Ports: []networkingv1.NetworkPolicyPort{ssh[0], workers[0]}},
			dnsRule(opts),
		}, extraEgressRules(s.ExtraEgress)...),
	}
}

// jobIngress: from the job's own pods on every port (OpenMPI Workers connect
// back to mpirun on dynamic ports), then one rule per extra ingress source.
func jobIngress(jobName string, s Settings) []networkingv1.NetworkPolicyIngressRule {
	return append([]networkingv1.NetworkPolicyIngressRule{
		{From: []networkingv1.NetworkPolicyPeer{{PodSelector: jobPods(jobName)}}},
	}, extraIngressRules(s.ExtraIngress)...)
}

// extraIngressRules: one rule per source, naming its namespace by the
// kubernetes.io/metadata.name label and, when given, its pods by one label.
func extraIngressRules(sources []IngressSource) []networkingv1.NetworkPolicyIngressRule {
	out := make([]networkingv1.NetworkPolicyIngressRule, 0, len(sources))
	for _, src := range sources {
		peer := networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{namespaceNameLabel: src.Namespace}},
		}
		if src.LabelKey != "" {
			peer.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{src.LabelKey: src.LabelValue}}
		}
		rule := networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{peer}}
		if src.Ports.Start != 0 {
			rule.Ports = tcpPorts(src.Ports)
		}
		out = append(out, rule)
	}
	return out
}

// jobPods selects every pod of the job's JobSet (the Trainer names it after the job).
func jobPods(jobName string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{jobSetNameLabel: jobName}}
}

// jobRolePods narrows jobPods to one replicated job (launcher or node).
func jobRolePods(jobName, replicatedJob string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{
		jobSetNameLabel:        jobName,
		replicatedJobNameLabel: replicatedJob,
	}}
}

// dnsRule lets the job reach the cluster DNS pods on each DNS port, over UDP
// and over TCP (answers too large for UDP are retried over TCP).
func dnsRule(opts Options) networkingv1.NetworkPolicyEgressRule {
	ports := make([]networkingv1.NetworkPolicyPort, 0, 2*len(opts.DNSPorts))
	for _, p := range opts.DNSPorts {
		ports = append(ports,
			networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(p))},
			networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(p))})
	}
	return networkingv1.NetworkPolicyEgressRule{
		To: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{namespaceNameLabel: opts.DNSNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: opts.DNSPodLabels},
		}},
		Ports: ports,
	}
}

func extraEgressRules(rules []EgressRule) []networkingv1.NetworkPolicyEgressRule {
	out := make([]networkingv1.NetworkPolicyEgressRule, 0, len(rules))
	for _, r := range rules {
		rule := networkingv1.NetworkPolicyEgressRule{
			To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: r.CIDR}}},
		}
		switch {
		case r.Ports.Start != 0:
			rule.Ports = portsOf(r.Protocol, r.Ports)
		case r.Protocol != "":
			rule.Ports = []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(r.Protocol)}}
		}
		out = append(out, rule)
	}
	return out
}

func tcpPorts(r PortRange) []networkingv1.NetworkPolicyPort { return portsOf(corev1.ProtocolTCP, r) }

// portsOf spells the protocol out although TCP is the API default: the stored
// object then equals the generated one field by field, which is how drift is found.
func portsOf(protocol corev1.Protocol, r PortRange) []networkingv1.NetworkPolicyPort {
	p := networkingv1.NetworkPolicyPort{Protocol: ptr.To(protocol), Port: ptr.To(intstr.FromInt32(r.Start))}
	if r.End != 0 && r.End != r.Start {
		p.EndPort = ptr.To(r.End)
	}
	return []networkingv1.NetworkPolicyPort{p}
}
