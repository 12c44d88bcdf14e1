package networkpolicies

import (
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDescribe(t *testing.T) {
	rt := &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "mpi"}}
	namespace := func(a ...string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Annotations: labels(a...)}}
	}
	cases := map[string]struct {
		opts Options
		ns   *corev1.Namespace
		rt   *trainer.ClusterTrainingRuntime
		want string
	}{
		"default": {ns: namespace(),
			want: `network policy "ingress-isolated" (controller default): no pod outside the job can connect to its Launcher and Workers; its pods may connect anywhere the namespace's other policies allow`},
		"no namespace read": {
			want: `network policy "ingress-isolated" (controller default): no pod outside the job can connect to its Launcher and Workers; its pods may connect anywhere the namespace's other policies allow`},
		"strict by namespace, with extra egress and ingress": {
			ns: namespace(AnnotationTemplate, "job-isolated", AnnotationExtraEgress, "52.216.0.0/15:443", AnnotationExtraIngress, "monitoring:9090"),
			want: `network policy "job-isolated" (Namespace "team-a"): no pod outside the job can connect to its Launcher and Workers except from monitoring:9090; ` +
				`its pods cannot connect outside the job except to cluster DNS (kube-system port 53) and 52.216.0.0/15:443: object storage, registries and the Kubernetes API need mpiguard.io/network-policy-extra-egress`},
		"strict by controller flag": {opts: Options{DefaultTemplate: TemplateJobIsolated}, ns: namespace(),
			want: `network policy "job-isolated" (controller default): no pod outside the job can connect to its Launcher and Workers; ` +
				`its pods cannot connect outside the job except to cluster DNS (kube-system port 53): object storage, registries and the Kubernetes API need mpiguard.io/network-policy-extra-egress`},
		"restricted by runtime": {ns: namespace(),
			rt: &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "mpi", Annotations: labels(AnnotationTemplate, "restricted", AnnotationSSHPort, "22")}},
			want: `network policy "restricted" (ClusterTrainingRuntime "mpi"): no pod outside the job can connect to its Launcher and Workers; ` +
				`inside the job only the Launcher reaches sshd (TCP 22) and the job's pods reach each other on TCP 50000-50999 only; ` +
				`its pods cannot connect outside the job except to cluster DNS (kube-system port 53): object storage, registries and the Kubernetes API need mpiguard.io/network-policy-extra-egress`},
		"off": {ns: namespace(AnnotationTemplate, "off"),
			want: `network policy "off" (Namespace "team-a"): mpiguard writes no NetworkPolicy: the job is as open as the namespace's other policies leave it`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := rt
			if tc.rt != nil {
				r = tc.rt
			}
			if got := Describe(tc.opts, tc.ns, r).String(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
