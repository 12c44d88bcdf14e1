package networkpolicies

import (
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
)

func TestAddFlags(t *testing.T) {
	cases := map[string]struct {
		args    []string
		want    Options
		wantErr bool
	}{
		"no flags: enabled, other defaults filled at setup": {args: nil, want: Options{Enabled: true}},
		"disabled": {args: []string{"--network-policies=false"}, want: Options{}},
		"every flag": {
			args: []string{
				"--network-policy-default-template=restricted",
				"--network-policy-ssh-port=22",
				"--network-policy-worker-ports=40000-40999",
				"--network-policy-extra-egress=10.0.0.0/8:443",
				"--network-policy-extra-egress=192.168.0.0/16:9000-9100/TCP",
				"--network-policy-dns=dns/app=coredns,tier=infra",
			},
			want: Options{
				Enabled:         true,
				DefaultTemplate: TemplateRestricted, SSHPort: 22, WorkerPorts: PortRange{40000, 40999},
				ExtraEgress: []EgressRule{
					{CIDR: "10.0.0.0/8", Protocol: corev1.ProtocolTCP, Ports: PortRange{Start: 443}},
					{CIDR: "192.168.0.0/16", Protocol: corev1.ProtocolTCP, Ports: PortRange{9000, 9100}},
				},
				DNSNamespace: "dns", DNSPodLabels: labels("app", "coredns", "tier", "infra"),
			},
		},
		"OpenShift DNS: openshift-dns pods by their daemonset label, on 5353": {
			args: []string{
				"--network-policy-dns=openshift-dns/dns.operator.openshift.io/daemonset-dns=default",
				"--network-policy-dns-ports=5353",
			},
			want: Options{
				Enabled:      true,
				DNSNamespace: "openshift-dns", DNSPodLabels: labels("dns.operator.openshift.io/daemonset-dns", "default"),
				DNSPorts: []int32{5353},
			},
		},
		"several DNS ports, a repeat kept once": {
			args: []string{"--network-policy-dns-ports=53, 5353,53"},
			want: Options{Enabled: true, DNSPorts: []int32{53, 5353}},
		},
		"bad template":    {args: []string{"--network-policy-default-template=open"}, wantErr: true},
		"bad dns port":    {args: []string{"--network-policy-dns-ports=53,dns"}, wantErr: true},
		"no dns port":     {args: []string{"--network-policy-dns-ports="}, wantErr: true},
		"bad dns label":   {args: []string{"--network-policy-dns=kube-system/k8s app=kube-dns"}, wantErr: true},
		"bad dns ns":      {args: []string{"--network-policy-dns=Kube_System/k8s-app=kube-dns"}, wantErr: true},
		"bad egress":      {args: []string{"--network-policy-extra-egress=minio:9000"}, wantErr: true},
		"bad dns":         {args: []string{"--network-policy-dns=kube-dns"}, wantErr: true},
		"bad worker port": {args: []string{"--network-policy-worker-ports=0-10"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			got := DefaultOptions()
			got.AddFlags(fs)
			err := fs.Parse(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse error = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}
