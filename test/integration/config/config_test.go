// Package config checks that the kustomize installation in config/ renders and
// that the real kube-apiserver accepts every object it renders (server-side
// dry-run, with the Trainer and cert-manager CRDs installed).
package config

import (
	"context"
	"testing"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

func TestConfig(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Config")
}

var _ = BeforeSuite(func(_ context.Context) {
	certManagerCRDs, err := framework.CertManagerCRDs()
	Expect(err).NotTo(HaveOccurred())
	env = framework.StartSuite(context.Background(), framework.Options{
		Name:         "config",
		ExtraCRDDirs: []string{certManagerCRDs},
		NoManager:    true,
	})
}, NodeTimeout(framework.SuiteStartTimeout))

// build renders a kustomization the way `kustomize build` does.
func build(dir string) []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := framework.KustomizeBuild(dir)
	Expect(err).NotTo(HaveOccurred())
	return objs
}

var _ = Describe("config/default", func() {
	It("serves the webhook with the certificate cert-manager issues for the webhook Service", func() {
		var (
			cert       certmanagerv1.Certificate
			deployment appsv1.Deployment
			service    corev1.Service
		)
		for _, o := range build("config/default") {
			var target any
			switch o.GetKind() {
			case "Certificate":
				target = &cert
			case "Deployment":
				target = &deployment
			case "Service":
				if o.GetName() != "mpiguard-webhook-service" {
					continue
				}
				target = &service
			default:
				continue
			}
			Expect(runtimeFromUnstructured(o.Object, target)).To(Succeed())
		}
		Expect(cert.Spec.DNSNames).To(ConsistOf(
			service.Name+"."+service.Namespace+".svc",
			service.Name+"."+service.Namespace+".svc.cluster.local",
		))
		var mounted string
		for _, v := range deployment.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				mounted = v.Secret.SecretName
			}
		}
		Expect(mounted).To(Equal(cert.Spec.SecretName), "the Deployment must mount the Secret cert-manager writes")
		Expect(deployment.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		c := deployment.Spec.Template.Spec.Containers[0]
		Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		Expect(deployment.Spec.Template.Spec.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
	})

	It("is accepted by the apiserver (server-side dry-run)", func(ctx context.Context) {
		objs := build("config/default")
		Expect(objs).NotTo(BeEmpty())
		kinds := map[string]int{}
		for _, o := range objs {
			kinds[o.GetKind()]++
			// The namespace is created for real: namespaced objects cannot be
			// dry-run into a namespace that does not exist.
			if o.GetKind() == "Namespace" {
				Expect(env.Client.Create(ctx, o.DeepCopy())).To(Succeed())
			}
		}
		for _, o := range objs {
			if o.GetKind() == "Namespace" {
				continue
			}
			err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.DryRunAll, client.FieldOwner("mpiguard-config-test"), client.ForceOwnership)
			Expect(err).NotTo(HaveOccurred(), "server-side dry-run of %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		}
		for _, kind := range []string{"Deployment", "PodDisruptionBudget", "Service", "Issuer", "Certificate", "ValidatingWebhookConfiguration", "ClusterRole", "ServiceAccount", "NetworkPolicy"} {
			Expect(kinds).To(HaveKey(kind), "config/default renders no %s", kind)
		}
	})

	It("never sends mpiguard metadata-only updates, objects being deleted or suspends (matchConditions)", func() {
		want := map[string][]string{
			"mtrainjob.mpiguard.io":               {"not-being-deleted", "spec-changes", "not-only-suspending"},
			"vtrainjob.mpiguard.io":               {"not-being-deleted", "spec-changes", "not-only-suspending"},
			"vclustertrainingruntime.mpiguard.io": {"not-being-deleted", "spec-labels-or-annotations-change"},
			"vtrainingruntime.mpiguard.io":        {"not-being-deleted", "spec-labels-or-annotations-change"},
			// Deletions on record: it must see every DELETE, and never blocks
			// one (failurePolicy Ignore, always allowed).
			"odelete.mpiguard.io": {},
		}
		got := map[string][]string{}
		for _, o := range build("config/default") {
			if o.GetKind() != "ValidatingWebhookConfiguration" && o.GetKind() != "MutatingWebhookConfiguration" {
				continue
			}
			webhooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, w := range webhooks {
				var hook admissionregistrationv1.ValidatingWebhook
				Expect(runtimeFromUnstructured(w.(map[string]any), &hook)).To(Succeed())
				got[hook.Name] = []string{}
				for _, c := range hook.MatchConditions {
					got[hook.Name] = append(got[hook.Name], c.Name)
				}
			}
		}
		Expect(got).To(Equal(want), "every webhook needs its matchConditions (config/webhook/match-conditions-*.yaml)")
	})

	It("keeps a terminating pod serving until it left the Service, within its grace period", func() {
		for _, o := range build("config/default") {
			if o.GetKind() != "Deployment" {
				continue
			}
			var d appsv1.Deployment
			Expect(runtimeFromUnstructured(o.Object, &d)).To(Succeed())
			c := d.Spec.Template.Spec.Containers[0]
			Expect(c.Lifecycle).NotTo(BeNil())
			Expect(c.Lifecycle.PreStop).NotTo(BeNil())
			Expect(c.Lifecycle.PreStop.Sleep).NotTo(BeNil(), "the image has no shell: the preStop delay is the native sleep action")
			// The grace period covers the delay and the 30 s graceful shutdown.
			Expect(d.Spec.Template.Spec.TerminationGracePeriodSeconds).To(HaveValue(BeNumerically(">=", c.Lifecycle.PreStop.Sleep.Seconds+30)))
		}
	})

	It("keeps every webhook away from mpiguard's namespace, kube-system and namespaces labelled mpiguard.io/exempt=true, and injects the CA", func() {
		for _, o := range build("config/default") {
			var webhooks []any
			switch o.GetKind() {
			case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
				webhooks, _, _ = unstructured.NestedSlice(o.Object, "webhooks")
			default:
				continue
			}
			Expect(o.GetAnnotations()).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", "mpiguard-system/mpiguard-serving-cert"))
			for _, w := range webhooks {
				var hook admissionregistrationv1.ValidatingWebhook
				Expect(runtimeFromUnstructured(w.(map[string]any), &hook)).To(Succeed())
				Expect(hook.NamespaceSelector).NotTo(BeNil(), "webhook %s has no namespaceSelector: add it to config/webhook's patches", hook.Name)
				Expect(hook.NamespaceSelector.MatchExpressions).To(ContainElement(HaveField("Values", ContainElements("mpiguard-system", "kube-system"))), "webhook %s", hook.Name)
				Expect(hook.NamespaceSelector.MatchExpressions).To(ContainElement(And(HaveField("Key", "mpiguard.io/exempt"), HaveField("Operator", BeEquivalentTo("NotIn")), HaveField("Values", ConsistOf("true")))), "webhook %s", hook.Name)
				Expect(hook.ClientConfig.Service).NotTo(BeNil())
				Expect(hook.ClientConfig.Service.Name).To(Equal("mpiguard-webhook-service"))
				Expect(hook.TimeoutSeconds).NotTo(BeNil(), "webhook %s needs a short timeout", hook.Name)
				Expect(*hook.TimeoutSeconds).To(BeNumerically("<=", 10))
			}
		}
	})
})
