package config

import (
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// rendered is what config/default renders, decoded: the mpiguard Deployment,
// its NetworkPolicies and Services.
type rendered struct {
	deployment appsv1.Deployment
	policies   []networkingv1.NetworkPolicy
	services   map[string]corev1.Service
}

func renderDefault() rendered {
	GinkgoHelper()
	r := rendered{services: map[string]corev1.Service{}}
	for _, o := range build("config/default") {
		switch o.GetKind() {
		case "Deployment":
			Expect(runtimeFromUnstructured(o.Object, &r.deployment)).To(Succeed())
		case "NetworkPolicy":
			var p networkingv1.NetworkPolicy
			Expect(runtimeFromUnstructured(o.Object, &p)).To(Succeed())
			r.policies = append(r.policies, p)
		case "Service":
			var svc corev1.Service
			Expect(runtimeFromUnstructured(o.Object, &svc)).To(Succeed())
			r.services[svc.Name] = svc
		}
	}
	return r
}

// containerPort returns the mpiguard container's port of that name.
func (r rendered) containerPort(name string) corev1.ContainerPort {
	GinkgoHelper()
	for _, p := range r.deployment.Spec.Template.Spec.Containers[0].Ports {
		if p.Name == name {
			if p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
			return p
		}
	}
	Fail("the Deployment's container has no port named " + name)
	return corev1.ContainerPort{}
}

// arg returns the value of the container's --name= argument.
func (r rendered) arg(name string) string {
	GinkgoHelper()
	for _, a := range r.deployment.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	Fail("the Deployment passes no --" + name)
	return ""
}

// policyPorts lists a rule's ports as "protocol/number".
func policyPorts(ports []networkingv1.NetworkPolicyPort) []string {
	var out []string
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		Expect(p.Port).NotTo(BeNil(), "a rule without a port allows every port")
		Expect(p.Port.Type).To(Equal(intstr.Int), "ports are numbers, compared with the Deployment's")
		Expect(p.EndPort).To(BeNil(), "a port range allows more than the port")
		out = append(out, string(proto)+"/"+p.Port.String())
	}
	return out
}

func portOf(p corev1.ContainerPort) string {
	return string(p.Protocol) + "/" + strconv.Itoa(int(p.ContainerPort))
}

var _ = Describe("config/default's NetworkPolicy for mpiguard's pods", func() {
	It("selects the Deployment's pods and allows in only the webhook and metrics ports, out only the apiserver and DNS", func() {
		r := renderDefault()
		podLabels := labels.Set(r.deployment.Spec.Template.Labels)
		var mine []networkingv1.NetworkPolicy
		for _, p := range r.policies {
			sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
			Expect(err).NotTo(HaveOccurred())
			if !sel.Empty() && sel.Matches(podLabels) {
				mine = append(mine, p)
			}
		}
		Expect(mine).To(HaveLen(1), "exactly one NetworkPolicy of config/default selects mpiguard's pods (labels %v)", podLabels)
		p := mine[0]
		Expect(p.Namespace).To(Equal(r.deployment.Namespace))
		Expect(p.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress),
			"both directions are confined (without Egress in policyTypes, egress is open)")

		By("ingress: the webhook and metrics ports, and nothing else")
		webhook, metrics := r.containerPort("webhook"), r.containerPort("metrics")
		var ingress []string
		for _, rule := range p.Spec.Ingress {
			ingress = append(ingress, policyPorts(rule.Ports)...)
		}
		Expect(ingress).To(ConsistOf(portOf(webhook), portOf(metrics)))
		Expect(ingress).To(ConsistOf("TCP/9443", "TCP/8443"))

		By("the ports the policy opens are the ones mpiguard listens on and the Services target")
		Expect(r.arg("webhook-port")).To(Equal(strconv.Itoa(int(webhook.ContainerPort))))
		Expect(r.arg("metrics-bind-address")).To(Equal(":" + strconv.Itoa(int(metrics.ContainerPort))))
		Expect(r.services).To(HaveKey("mpiguard-webhook-service"))
		Expect(r.services).To(HaveKey("mpiguard-metrics-service"))
		for name, want := range map[string]corev1.ContainerPort{"mpiguard-webhook-service": webhook, "mpiguard-metrics-service": metrics} {
			for _, sp := range r.services[name].Spec.Ports {
				Expect(sp.TargetPort.String()).To(BeElementOf(want.Name, strconv.Itoa(int(want.ContainerPort))),
					"Service %s targets a port the NetworkPolicy does not open", name)
			}
		}

		By("egress: the apiserver (443, 6443) and DNS (53 over UDP and TCP), to any destination, and nothing else")
		var egress []string
		for _, rule := range p.Spec.Egress {
			Expect(rule.To).To(BeEmpty(), "the apiserver's address is not selectable portably")
			egress = append(egress, policyPorts(rule.Ports)...)
		}
		Expect(egress).To(ConsistOf("TCP/443", "TCP/6443", "UDP/53", "TCP/53"))
	})

	It("serves metrics over HTTPS with authentication, on the port the metrics Service names https", func() {
		r := renderDefault()
		for _, a := range r.deployment.Spec.Template.Spec.Containers[0].Args {
			Expect(a).NotTo(HavePrefix("--metrics-secure=false"), "metrics must be served securely")
		}
		svc := r.services["mpiguard-metrics-service"]
		Expect(svc.Spec.Ports).To(ConsistOf(HaveField("Name", "https")))

		By("the ServiceMonitor scrapes that port over HTTPS with Prometheus' token")
		var monitor struct {
			Spec struct {
				Endpoints []struct {
					Port            string `json:"port"`
					Scheme          string `json:"scheme"`
					BearerTokenFile string `json:"bearerTokenFile"`
				} `json:"endpoints"`
			} `json:"spec"`
		}
		for _, o := range build("config/prometheus") {
			if o.GetKind() == "ServiceMonitor" {
				Expect(runtimeFromUnstructured(o.Object, &monitor)).To(Succeed())
			}
		}
		Expect(monitor.Spec.Endpoints).To(ConsistOf(And(
			HaveField("Port", "https"),
			HaveField("Scheme", "https"),
			HaveField("BearerTokenFile", Not(BeEmpty())),
		)))
	})
})
