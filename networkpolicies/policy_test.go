package networkpolicies

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Literal spellings, on purpose not the package's constants: if a label key or a
// port changed in the code, these tests must notice.
const (
	jobLabel  = "jobset.sigs.k8s.io/jobset-name"
	roleLabel = "jobset.sigs.k8s.io/replicatedjob-name"
)

func testJob() *trainer.TrainJob {
	return &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "team-a", UID: "uid-1"}}
}

func labels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func port(proto corev1.Protocol, p int32, end *int32) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(proto), Port: ptr.To(intstr.FromInt32(p)), EndPort: end}
}

var (
	wantJobPeer = networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: labels(jobLabel, "pi")}}
	wantDNSRule = networkingv1.NetworkPolicyEgressRule{
		To: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels("kubernetes.io/metadata.name", "kube-system")},
			PodSelector:       &metav1.LabelSelector{MatchLabels: labels("k8s-app", "kube-dns")},
		}},
		Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolUDP, 53, nil), port(corev1.ProtocolTCP, 53, nil)},
	}
	wantMeta = func(template string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: "pi", Namespace: "team-a",
			Labels: labels("app.kubernetes.io/managed-by", "mpiguard-networkpolicies", "mpiguard.io/network-policy-template", template),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Name: "pi", UID: "uid-1",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		}
	}
	npTypeMeta = metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"}
	bothTypes  = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
)

func TestDesiredPolicy(t *testing.T) {
	opts := Options{}.withDefaults()
	cases := map[string]struct {
		settings Settings
		opts     *Options
		want     *networkingv1.NetworkPolicy
	}{
		"ingress-isolated: same job in on every port, egress not part of the policy": {
			settings: Settings{Template: TemplateIngressIsolated, SSHPort: 2222, WorkerPorts: PortRange{50000, 50999},
				ExtraEgress: []EgressRule{{CIDR: "10.20.0.0/16"}}},
			want: &networkingv1.NetworkPolicy{
				TypeMeta: npTypeMeta, ObjectMeta: wantMeta("ingress-isolated"),
				Spec: networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchLabels: labels(jobLabel, "pi")},
					PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
					Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{wantJobPeer}}},
				},
			},
		},
		"ingress-isolated with extra ingress: one rule per source after the job's": {
			settings: Settings{Template: TemplateIngressIsolated, ExtraIngress: []IngressSource{
				{Namespace: "monitoring", LabelKey: "app.kubernetes.io/name", LabelValue: "prometheus", Ports: PortRange{Start: 9090}},
				{Namespace: "ingress-nginx", Ports: PortRange{6006, 6010}},
				{Namespace: "tools"},
			}},
			want: &networkingv1.NetworkPolicy{
				TypeMeta: npTypeMeta, ObjectMeta: wantMeta("ingress-isolated"),
				Spec: networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchLabels: labels(jobLabel, "pi")},
					PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
					Ingress: []networkingv1.NetworkPolicyIngressRule{
						{From: []networkingv1.NetworkPolicyPeer{wantJobPeer}},
						{
							From: []networkingv1.NetworkPolicyPeer{{
								NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels("kubernetes.io/metadata.name", "monitoring")},
								PodSelector:       &metav1.LabelSelector{MatchLabels: labels("app.kubernetes.io/name", "prometheus")},
							}},
							Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 9090, nil)},
						},
						{
							From: []networkingv1.NetworkPolicyPeer{{
								NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels("kubernetes.io/metadata.name", "ingress-nginx")},
							}},
							Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 6006, ptr.To[int32](6010))},
						},
						{From: []networkingv1.NetworkPolicyPeer{{
							NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels("kubernetes.io/metadata.name", "tools")},
						}}},
					},
				},
			},
		},
		"job-isolated: same job in, same job and DNS out, all ports": {
			settings: Settings{Template: TemplateJobIsolated, SSHPort: 2222, WorkerPorts: PortRange{50000, 50999}},
			want: &networkingv1.NetworkPolicy{
				TypeMeta: npTypeMeta, ObjectMeta: wantMeta("job-isolated"),
				Spec: networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchLabels: labels(jobLabel, "pi")},
					PolicyTypes: bothTypes,
					Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{wantJobPeer}}},
					Egress: []networkingv1.NetworkPolicyEgressRule{
						{To: []networkingv1.NetworkPolicyPeer{wantJobPeer}},
						wantDNSRule,
					},
				},
			},
		},
		"job-isolated with extra egress: one rule per destination after DNS": {
			settings: Settings{Template: TemplateJobIsolated, ExtraEgress: []EgressRule{
				{CIDR: "10.20.0.0/16", Protocol: corev1.ProtocolTCP, Ports: PortRange{Start: 443}},
				{CIDR: "10.30.0.0/16", Protocol: corev1.ProtocolTCP, Ports: PortRange{9000, 9100}},
				{CIDR: "192.168.0.10/32", Protocol: corev1.ProtocolUDP},
				{CIDR: "172.16.0.0/12"},
			}},
			want: &networkingv1.NetworkPolicy{
				TypeMeta: npTypeMeta, ObjectMeta: wantMeta("job-isolated"),
				Spec: networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchLabels: labels(jobLabel, "pi")},
					PolicyTypes: bothTypes,
					Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{wantJobPeer}}},
					Egress: []networkingv1.NetworkPolicyEgressRule{
						{To: []networkingv1.NetworkPolicyPeer{wantJobPeer}},
						wantDNSRule,
						{
							To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.20.0.0/16"}}},
							Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 443, nil)},
						},
						{
							To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.30.0.0/16"}}},
							Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 9000, ptr.To[int32](9100))},
						},
						{
							To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "192.168.0.10/32"}}},
							Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP)}},
						},
						{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "172.16.0.0/12"}}}},
					},
				},
			},
		},
		"restricted: Launcher to sshd, job pods on the worker range, DNS": {
			settings: Settings{Template: TemplateRestricted, SSHPort: 2222, WorkerPorts: PortRange{50000, 50999}},
			want: &networkingv1.NetworkPolicy{
				TypeMeta: npTypeMeta, ObjectMeta: wantMeta("restricted"),
				Spec: networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchLabels: labels(jobLabel, "pi")},
					PolicyTypes: bothTypes,
					Ingress: []networkingv1.NetworkPolicyIngressRule{
						{
							From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{
								MatchLabels: labels(jobLabel, "pi", roleLabel, "launcher")}}},
							Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 2222, nil)},
						},
						{
							From:  []networkingv1.NetworkPolicyPeer{wantJobPeer},
							Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 50000, ptr.To[int32](50999))},
						},
					},
					Egress: []networkingv1.NetworkPolicyEgressRule{
						{
							To: []networkingv1.NetworkPolicyPeer{wantJobPeer},
							Ports: []networkingv1.NetworkPolicyPort{
								port(corev1.ProtocolTCP, 2222, nil),
								port(corev1.ProtocolTCP, 50000, ptr.To[int32](50999)),
							},
						},
						wantDNSRule,
					},
				},
			},
		},
		"restricted with custom sshd port, a single worker port and custom DNS": {
			settings: Settings{Template: TemplateRestricted, SSHPort: 22, WorkerPorts: PortRange{Start: 7000},
				ExtraEgress: []EgressRule{{CIDR: "fd00::/8", Protocol: corev1.ProtocolTCP, Ports: PortRange{Start: 443}}}},
			opts: &Options{DNSNamespace: "dns", DNSPodLabels: labels("app", "coredns")},
			want: &networkingv1.NetworkPolicy{
				TypeMeta: npTypeMeta, ObjectMeta: wantMeta("restricted"),
				Spec: networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchLabels: labels(jobLabel, "pi")},
					PolicyTypes: bothTypes,
					Ingress: []networkingv1.NetworkPolicyIngressRule{
						{
							From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{
								MatchLabels: labels(jobLabel, "pi", roleLabel, "launcher")}}},
							Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 22, nil)},
						},
						{
							From:  []networkingv1.NetworkPolicyPeer{wantJobPeer},
							Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 7000, nil)},
						},
					},
					Egress: []networkingv1.NetworkPolicyEgressRule{
						{
							To:    []networkingv1.NetworkPolicyPeer{wantJobPeer},
							Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 22, nil), port(corev1.ProtocolTCP, 7000, nil)},
						},
						{
							To: []networkingv1.NetworkPolicyPeer{{
								NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels("kubernetes.io/metadata.name", "dns")},
								PodSelector:       &metav1.LabelSelector{MatchLabels: labels("app", "coredns")},
							}},
							Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolUDP, 53, nil), port(corev1.ProtocolTCP, 53, nil)},
						},
						{
							To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "fd00::/8"}}},
							Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 443, nil)},
						},
					},
				},
			},
		},
		"OpenShift DNS: openshift-dns pods by their daemonset label, on every DNS port over UDP and TCP": {
			settings: Settings{Template: TemplateJobIsolated, SSHPort: 2222, WorkerPorts: PortRange{50000, 50999}},
			opts: &Options{DNSNamespace: "openshift-dns", DNSPodLabels: labels("dns.operator.openshift.io/daemonset-dns", "default"),
				DNSPorts: []int32{5353, 53}},
			want: &networkingv1.NetworkPolicy{
				TypeMeta: npTypeMeta, ObjectMeta: wantMeta("job-isolated"),
				Spec: networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchLabels: labels(jobLabel, "pi")},
					PolicyTypes: bothTypes,
					Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{wantJobPeer}}},
					Egress: []networkingv1.NetworkPolicyEgressRule{
						{To: []networkingv1.NetworkPolicyPeer{wantJobPeer}},
						{
							To: []networkingv1.NetworkPolicyPeer{{
								NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels("kubernetes.io/metadata.name", "openshift-dns")},
								PodSelector:       &metav1.LabelSelector{MatchLabels: labels("dns.operator.openshift.io/daemonset-dns", "default")},
							}},
							Ports: []networkingv1.NetworkPolicyPort{
								port(corev1.ProtocolUDP, 5353, nil), port(corev1.ProtocolTCP, 5353, nil),
								port(corev1.ProtocolUDP, 53, nil), port(corev1.ProtocolTCP, 53, nil),
							},
						},
					},
				},
			},
		},
		"off: no policy": {
			settings: Settings{Template: TemplateOff, SSHPort: 2222, WorkerPorts: PortRange{50000, 50999}},
			want:     nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := opts
			if tc.opts != nil {
				o = tc.opts.withDefaults()
			}
			got := desiredPolicy(testJob(), tc.settings, o)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("desiredPolicy (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEveryPeerSelectsOnlyTheJob walks every generated policy and checks the
// property the issue insists on: the policy's own podSelector, and every pod
// peer in the job's namespace, carries jobset-name=<job>. Only the DNS peer (which
// names another namespace explicitly), the extra ingress sources (each names its
// namespace) and ipBlocks are exempt.
func TestEveryPeerSelectsOnlyTheJob(t *testing.T) {
	settings := Settings{SSHPort: 2222, WorkerPorts: PortRange{50000, 50999},
		ExtraEgress:  []EgressRule{{CIDR: "10.0.0.0/8"}},
		ExtraIngress: []IngressSource{{Namespace: "monitoring", LabelKey: "app", LabelValue: "prometheus"}}}
	for _, tmpl := range []Template{TemplateIngressIsolated, TemplateJobIsolated, TemplateRestricted} {
		t.Run(string(tmpl), func(t *testing.T) {
			settings.Template = tmpl
			p := desiredPolicy(testJob(), settings, Options{}.withDefaults())
			if got := p.Spec.PodSelector.MatchLabels[jobLabel]; got != "pi" {
				t.Errorf("spec.podSelector %s = %q, want %q", jobLabel, got, "pi")
			}
			if n := len(p.Spec.PodSelector.MatchExpressions); n != 0 {
				t.Errorf("spec.podSelector has %d matchExpressions, want none", n)
			}
			var peers []networkingv1.NetworkPolicyPeer
			for _, r := range p.Spec.Ingress {
				if len(r.From) == 0 {
					t.Errorf("ingress rule %+v has no from: it would admit every source", r)
				}
				peers = append(peers, r.From...)
			}
			for _, r := range p.Spec.Egress {
				if len(r.To) == 0 {
					t.Errorf("egress rule %+v has no to: it would allow every destination", r)
				}
				peers = append(peers, r.To...)
			}
			for _, peer := range peers {
				switch {
				case peer.IPBlock != nil:
				case peer.NamespaceSelector != nil:
					if ns := peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]; ns != "kube-system" && ns != "monitoring" {
						t.Errorf("peer %+v opens a namespace other than kube-system (DNS) and monitoring (extra ingress)", peer)
					}
				case peer.PodSelector == nil || peer.PodSelector.MatchLabels[jobLabel] != "pi":
					t.Errorf("peer %+v is not limited to pods of job pi", peer)
				}
			}
		})
	}
}

func TestApplyConfigurationKeepsEveryField(t *testing.T) {
	settings := Settings{Template: TemplateRestricted, SSHPort: 2222, WorkerPorts: PortRange{50000, 50999},
		ExtraEgress: []EgressRule{{CIDR: "10.0.0.0/8", Protocol: corev1.ProtocolUDP}}}
	want := desiredPolicy(testJob(), settings, Options{}.withDefaults())
	ac, err := applyConfiguration(want)
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(ac.Kind, ""); got != "NetworkPolicy" {
		t.Errorf("kind = %q, want NetworkPolicy", got)
	}
	if got := ptr.Deref(ac.APIVersion, ""); got != "networking.k8s.io/v1" {
		t.Errorf("apiVersion = %q, want networking.k8s.io/v1", got)
	}
	if ac.CreationTimestamp != nil {
		t.Errorf("creationTimestamp = %v, want unset (it is the apiserver's)", ac.CreationTimestamp)
	}
	if got, want := len(ac.Spec.Ingress), 2; got != want {
		t.Fatalf("ingress rules = %d, want %d", got, want)
	}
	if got := ptr.Deref(ac.Spec.Ingress[1].Ports[0].EndPort, 0); got != 50999 {
		t.Errorf("ingress[1].ports[0].endPort = %d, want 50999", got)
	}
	if got := ptr.Deref(ac.OwnerReferences[0].Controller, false); !got {
		t.Error("ownerReferences[0].controller is not true")
	}
	if got, want := len(ac.Spec.Egress), 3; got != want {
		t.Errorf("egress rules = %d, want %d", got, want)
	}
}
