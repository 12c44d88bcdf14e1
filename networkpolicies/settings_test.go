package networkpolicies

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestParseEgress(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []EgressRule
		wantErr string
	}{
		"empty": {in: "", want: nil},
		"port, range, protocol, bare CIDR, IPv6": {
			in: " 10.20.0.0/16:443, 10.30.0.0/16:9000-9100,192.168.0.10/32:53/udp,172.16.0.0/12, fd00::/8:443 ,10.0.0.0/8/UDP",
			want: []EgressRule{
				{CIDR: "10.20.0.0/16", Protocol: corev1.ProtocolTCP, Ports: PortRange{Start: 443}},
				{CIDR: "10.30.0.0/16", Protocol: corev1.ProtocolTCP, Ports: PortRange{9000, 9100}},
				{CIDR: "192.168.0.10/32", Protocol: corev1.ProtocolUDP, Ports: PortRange{Start: 53}},
				{CIDR: "172.16.0.0/12"},
				{CIDR: "fd00::/8", Protocol: corev1.ProtocolTCP, Ports: PortRange{Start: 443}},
				{CIDR: "10.0.0.0/8", Protocol: corev1.ProtocolUDP},
			},
		},
		"host bits are masked to the canonical CIDR": {
			in:   "10.1.2.3/8:443",
			want: []EgressRule{{CIDR: "10.0.0.0/8", Protocol: corev1.ProtocolTCP, Ports: PortRange{Start: 443}}},
		},
		"IPv6 address with host part": {
			in:   "fd00::1/128:8443",
			want: []EgressRule{{CIDR: "fd00::1/128", Protocol: corev1.ProtocolTCP, Ports: PortRange{Start: 8443}}},
		},
		"bad entries are reported and dropped, good ones kept": {
			in:      "10.0.0.0/8:443, s3.amazonaws.com:443, 10.0.0.0/33, 10.0.0.0/8:70000, 10.0.0.0/8:443/ICMP, 10.0.0.0/8:9-1",
			want:    []EgressRule{{CIDR: "10.0.0.0/8", Protocol: corev1.ProtocolTCP, Ports: PortRange{Start: 443}}},
			wantErr: `extra egress: "s3.amazonaws.com:443" is not CIDR[:port[-endPort]][/TCP|UDP|SCTP], e.g. 10.20.0.0/16:443; "10.0.0.0/33": "10.0.0.0/33" is not a CIDR: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range; "10.0.0.0/8:70000": port range "70000": "70000" is not a port; give a number from 1 to 65535; "10.0.0.0/8:443/ICMP": protocol "ICMP" is not TCP, UDP or SCTP; "10.0.0.0/8:9-1": port range "9-1" ends (1) before it starts (9); write it low-high, e.g. 1-9`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseEgress(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErr, errString(err)); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEgressRuleStringRoundTrips(t *testing.T) {
	in := "10.20.0.0/16:443,10.30.0.0/16:9000-9100,192.168.0.10/32:53/UDP,172.16.0.0/12,10.0.0.0/8/SCTP"
	rules, err := ParseEgress(in)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		got = append(got, r.String())
	}
	want := []string{"10.20.0.0/16:443", "10.30.0.0/16:9000-9100", "192.168.0.10/32:53/UDP", "172.16.0.0/12", "10.0.0.0/8/SCTP"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}
}

func TestParsePortRange(t *testing.T) {
	cases := map[string]struct {
		want    PortRange
		wantErr string
	}{
		"2222":        {want: PortRange{Start: 2222}},
		"50000-50999": {want: PortRange{50000, 50999}},
		"7000-7000":   {want: PortRange{Start: 7000}},
		"0":           {wantErr: `port range "0": "0" is not a port; give a number from 1 to 65535`},
		"1-65536":     {wantErr: `port range "1-65536": "65536" is not a port; give a number from 1 to 65535`},
		"ssh":         {wantErr: `port range "ssh": "ssh" is not a port; give a number from 1 to 65535`},
		"60000-50000": {wantErr: `port range "60000-50000" ends (50000) before it starts (60000); write it low-high, e.g. 50000-60000`},
	}
	for in, tc := range cases {
		t.Run(in, func(t *testing.T) {
			got, err := ParsePortRange(in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("range (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErr, errString(err)); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveSettings(t *testing.T) {
	opts := Options{ExtraEgress: []EgressRule{{CIDR: "10.0.0.0/8", Protocol: corev1.ProtocolTCP, Ports: PortRange{Start: 443}}}}.withDefaults()
	ns := func(a ...string) annotated { return annotated{what: `Namespace "team-a"`, annotations: labels(a...)} }
	rt := func(a ...string) annotated {
		return annotated{what: `ClusterTrainingRuntime "mpi"`, annotations: labels(a...)}
	}
	registry := EgressRule{CIDR: "10.0.0.0/8", Protocol: corev1.ProtocolTCP, Ports: PortRange{Start: 443}}

	cases := map[string]struct {
		ns, rt       annotated
		want         Settings
		wantProblems []string
	}{
		"nothing annotated: controller defaults": {
			ns: ns(), rt: rt(),
			want: Settings{Template: TemplateIngressIsolated, TemplateFrom: "controller default", SSHPort: 2222,
				WorkerPorts: PortRange{50000, 50999}, ExtraEgress: []EgressRule{registry}},
		},
		"runtime template applies where the namespace has none": {
			ns: ns(), rt: rt(AnnotationTemplate, "restricted"),
			want: Settings{Template: TemplateRestricted, TemplateFrom: `ClusterTrainingRuntime "mpi"`, SSHPort: 2222,
				WorkerPorts: PortRange{50000, 50999}, ExtraEgress: []EgressRule{registry}},
		},
		"namespace template wins over runtime template": {
			ns: ns(AnnotationTemplate, "job-isolated"), rt: rt(AnnotationTemplate, "off"),
			want: Settings{Template: TemplateJobIsolated, TemplateFrom: `Namespace "team-a"`, SSHPort: 2222,
				WorkerPorts: PortRange{50000, 50999}, ExtraEgress: []EgressRule{registry}},
		},
		"runtime ports win over namespace ports; egress is the union without repeats": {
			ns: ns(AnnotationSSHPort, "22", AnnotationWorkerPorts, "40000-40099",
				AnnotationExtraEgress, "10.0.0.0/8:443,192.168.1.0/24:9000"),
			rt: rt(AnnotationSSHPort, "2022", AnnotationWorkerPorts, "30000-30099", AnnotationExtraEgress, "172.16.0.0/12:5000"),
			want: Settings{Template: TemplateIngressIsolated, TemplateFrom: "controller default", SSHPort: 2022,
				WorkerPorts: PortRange{30000, 30099}, ExtraEgress: []EgressRule{
					registry,
					{CIDR: "172.16.0.0/12", Protocol: corev1.ProtocolTCP, Ports: PortRange{Start: 5000}},
					{CIDR: "192.168.1.0/24", Protocol: corev1.ProtocolTCP, Ports: PortRange{Start: 9000}},
				}},
		},
		"the runtime template's sshd port beats the namespace's, the runtime annotation beats both": {
			ns: ns(AnnotationSSHPort, "22"),
			rt: annotated{what: `ClusterTrainingRuntime "mpi"`, sshPort: 2022},
			want: Settings{Template: TemplateIngressIsolated, TemplateFrom: "controller default", SSHPort: 2022,
				WorkerPorts: PortRange{50000, 50999}, ExtraEgress: []EgressRule{registry}},
		},
		"runtime sshd annotation over its template": {
			ns: ns(),
			rt: annotated{what: `ClusterTrainingRuntime "mpi"`, sshPort: 2022, annotations: labels(AnnotationSSHPort, "2200")},
			want: Settings{Template: TemplateIngressIsolated, TemplateFrom: "controller default", SSHPort: 2200,
				WorkerPorts: PortRange{50000, 50999}, ExtraEgress: []EgressRule{registry}},
		},
		"namespace ports apply where the runtime has none": {
			ns: ns(AnnotationSSHPort, "22", AnnotationWorkerPorts, "40000"), rt: rt(),
			want: Settings{Template: TemplateIngressIsolated, TemplateFrom: "controller default", SSHPort: 22,
				WorkerPorts: PortRange{Start: 40000}, ExtraEgress: []EgressRule{registry}},
		},
		"bad namespace template falls back to the controller default, not to the runtime's off": {
			ns: ns(AnnotationTemplate, "restrictd"), rt: rt(AnnotationTemplate, "off"),
			want: Settings{Template: TemplateIngressIsolated, TemplateFrom: "controller default", SSHPort: 2222,
				WorkerPorts: PortRange{50000, 50999}, ExtraEgress: []EgressRule{registry}},
			wantProblems: []string{`Namespace "team-a" annotation mpiguard.io/network-policy: "restrictd" is not a network policy template; use one of "ingress-isolated", "job-isolated", "restricted" or "off"; using the controller default "ingress-isolated" until it is fixed`},
		},
		"extra ingress is the union of flag, runtime and namespace; a bad entry is dropped": {
			ns: ns(AnnotationExtraIngress, "monitoring/app.kubernetes.io/name=prometheus:9090, ingress-nginx:6006"),
			rt: rt(AnnotationExtraIngress, "ingress-nginx:6006,Monitoring:9090"),
			want: Settings{Template: TemplateIngressIsolated, TemplateFrom: "controller default", SSHPort: 2222,
				WorkerPorts: PortRange{50000, 50999}, ExtraEgress: []EgressRule{registry}, ExtraIngress: []IngressSource{
					{Namespace: "ingress-nginx", Ports: PortRange{Start: 6006}},
					{Namespace: "monitoring", LabelKey: "app.kubernetes.io/name", LabelValue: "prometheus", Ports: PortRange{Start: 9090}},
				}},
			wantProblems: []string{
				`ClusterTrainingRuntime "mpi" annotation mpiguard.io/network-policy-extra-ingress: extra ingress: "Monitoring:9090" is not NAMESPACE[/key=value][:port[-endPort]], e.g. monitoring/app.kubernetes.io/name=prometheus:9090: namespace "Monitoring": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'); those entries are not allowed until fixed`,
			},
		},
		"bad runtime port falls through to the namespace's; bad egress entry dropped": {
			ns: ns(AnnotationSSHPort, "22"),
			rt: rt(AnnotationSSHPort, "ssh", AnnotationWorkerPorts, "9-1", AnnotationExtraEgress, "minio:9000"),
			want: Settings{Template: TemplateIngressIsolated, TemplateFrom: "controller default", SSHPort: 22,
				WorkerPorts: PortRange{50000, 50999}, ExtraEgress: []EgressRule{registry}},
			wantProblems: []string{
				`ClusterTrainingRuntime "mpi" annotation mpiguard.io/network-policy-ssh-port: "ssh" is not a port; give a number from 1 to 65535; ignoring it`,
				`ClusterTrainingRuntime "mpi" annotation mpiguard.io/network-policy-worker-ports: port range "9-1" ends (1) before it starts (9); write it low-high, e.g. 1-9; ignoring it`,
				`ClusterTrainingRuntime "mpi" annotation mpiguard.io/network-policy-extra-egress: extra egress: "minio:9000" is not CIDR[:port[-endPort]][/TCP|UDP|SCTP], e.g. 10.20.0.0/16:443; those entries are not allowed until fixed`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, problems := resolveSettings(opts, tc.ns, tc.rt)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
			var msgs []string
			for _, p := range problems {
				msgs = append(msgs, p.Error())
			}
			if diff := cmp.Diff(tc.wantProblems, msgs); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		opts    Options
		wantErr string
	}{
		"zero value is valid": {opts: Options{}},
		"bad template": {opts: Options{DefaultTemplate: "open"},
			wantErr: `networkpolicies: default template: "open" is not a network policy template; use one of "ingress-isolated", "job-isolated", "restricted" or "off"`},
		"inverted range": {opts: Options{WorkerPorts: PortRange{9000, 8000}},
			wantErr: "networkpolicies: worker port range 9000-8000 is not within 1-65535 low-high"},
		"port too big": {opts: Options{SSHPort: 70000},
			wantErr: "networkpolicies: sshd port 70000 is outside 1-65535"},
		"OpenShift DNS is valid": {opts: Options{DNSNamespace: "openshift-dns",
			DNSPodLabels: labels("dns.operator.openshift.io/daemonset-dns", "default"), DNSPorts: []int32{5353}}},
		"bad DNS target": {opts: Options{DNSNamespace: "Kube_System", DNSPodLabels: labels("k8s app", "kube dns"), DNSPorts: []int32{0, 53}},
			wantErr: "networkpolicies: DNS: " + `namespace "Kube_System": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')` + "\n" +
				`label key "k8s app": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')` + "\n" +
				`label k8s app value "kube dns": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')` + "\n" +
				"port 0 is outside 1-65535"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantErr, errString(tc.opts.withDefaults().validate())); diff != "" {
				t.Errorf("validate (-want +got):\n%s", diff)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestParseIngress(t *testing.T) {
	got, err := ParseIngress(" monitoring/app.kubernetes.io/name=prometheus:9090, ingress-nginx:6006-6010 ,tools,, ")
	if err != nil {
		t.Fatal(err)
	}
	want := []IngressSource{
		{Namespace: "monitoring", LabelKey: "app.kubernetes.io/name", LabelValue: "prometheus", Ports: PortRange{Start: 9090}},
		{Namespace: "ingress-nginx", Ports: PortRange{6006, 6010}},
		{Namespace: "tools"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, src := range got {
		again, err := ParseIngress(src.String())
		if err != nil || len(again) != 1 || again[0] != src {
			t.Errorf("%q does not read back as %+v: %+v, %v", src.String(), src, again, err)
		}
	}
	for _, bad := range []string{"monitoring:0", "monitoring/app", "monitoring/=x", "-bad-", "monitoring/app=x:9000-8000", "10.0.0.0/8"} {
		if _, err := ParseIngress(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}
