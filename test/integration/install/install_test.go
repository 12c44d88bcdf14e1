package install

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mpiguard/mpiguard/test/framework"
)

const (
	// The namespace every namespaced object of config/ lands in.
	installNamespace = "mpiguard-system"
	fieldOwner       = client.FieldOwner("mpiguard-install-test")
)

// The openreports.io CRDs undeploy leaves alone (other tools share them).
var sharedCRDs = []string{"customresourcedefinition/reports.openreports.io", "customresourcedefinition/clusterreports.openreports.io"}

func build(dir string) []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := framework.KustomizeBuild(dir)
	Expect(err).NotTo(HaveOccurred())
	Expect(objs).NotTo(BeEmpty())
	return objs
}

func decodeYAML(out string) []*unstructured.Unstructured {
	GinkgoHelper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(out)), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		Expect(err).NotTo(HaveOccurred())
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// keys names objects as kubectl's dry-run report does: kind/name, lower case kind.
func keys(objs []*unstructured.Unstructured, except ...string) []string {
	var out []string
	for _, o := range objs {
		k := strings.ToLower(o.GetKind()) + "/" + o.GetName()
		if !contains(except, k) {
			out = append(out, k)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func into[T any](o *unstructured.Unstructured) *T {
	GinkgoHelper()
	var t T
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &t)).To(Succeed())
	return &t
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	GinkgoHelper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	Fail("the render has no " + kind + " " + name)
	return nil
}

// ensureNamespace creates the install namespace for real: namespaced objects
// cannot be dry-run into a namespace that does not exist, and a dry-run of
// the Namespace itself does not create it.
func ensureNamespace(ctx context.Context) {
	GinkgoHelper()
	err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metaName(installNamespace)})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// apply server-side applies objs, for real or as a dry-run.
func apply(ctx context.Context, objs []*unstructured.Unstructured, opts ...client.ApplyOption) {
	GinkgoHelper()
	opts = append(opts, fieldOwner, client.ForceOwnership)
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			continue // ensureNamespace
		}
		Expect(env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), opts...)).
			To(Succeed(), "server-side apply of %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
	}
}

// expectImageOnly checks that rendered is want with only the mpiguard
// container's image changed, to image.
func expectImageOnly(rendered, want []*unstructured.Unstructured, image string) {
	GinkgoHelper()
	Expect(keys(rendered)).To(ConsistOf(keys(want)))
	for _, o := range rendered {
		w := find(want, o.GetKind(), o.GetName()).DeepCopy()
		if w.GetKind() == "Deployment" {
			d := into[appsv1.Deployment](o)
			Expect(d.Spec.Template.Spec.Containers).To(ContainElement(And(HaveField("Name", "mpiguard"), HaveField("Image", image))))
			containers, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				if c.(map[string]any)["name"] == "mpiguard" {
					c.(map[string]any)["image"] = image
				}
			}
			Expect(unstructured.SetNestedSlice(w.Object, containers, "spec", "template", "spec", "containers")).To(Succeed())
		}
		Expect(o.Object).To(Equal(w.Object), "%s %s differs from the kustomize build", o.GetKind(), o.GetName())
	}
}

var _ = Describe("installing mpiguard as documented", Ordered, func() {
	var before string
	BeforeAll(func() { before = treeHash() })

	It("config/openshift serves webhooks and metrics with the service CA's certificates and has nothing of cert-manager", func() {
		objs := build("config/openshift")
		for _, o := range objs {
			Expect(o.GetAPIVersion()).NotTo(HavePrefix("cert-manager.io/"), "%s %s", o.GetKind(), o.GetName())
			for k := range o.GetAnnotations() {
				Expect(k).NotTo(ContainSubstring("cert-manager.io"), "%s %s", o.GetKind(), o.GetName())
			}
		}
		deployment := into[appsv1.Deployment](find(objs, "Deployment", "mpiguard-controller"))
		mounted := map[string]string{} // mount path -> Secret
		secretOf := map[string]string{}
		for _, v := range deployment.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				secretOf[v.Name] = v.Secret.SecretName
			}
		}
		c := deployment.Spec.Template.Spec.Containers[0]
		for _, m := range c.VolumeMounts {
			mounted[m.MountPath] = secretOf[m.Name]
		}
		argValue := func(name string) string {
			for _, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
					return v
				}
			}
			return ""
		}

		By("the webhook Service asks the service CA for the certificate the webhook server reads (--cert-dir)")
		webhookSvc := find(objs, "Service", "mpiguard-webhook-service")
		Expect(webhookSvc.GetAnnotations()).To(HaveKeyWithValue("service.beta.openshift.io/serving-cert-secret-name", mounted[argValue("cert-dir")]))
		Expect(mounted[argValue("cert-dir")]).NotTo(BeEmpty())

		By("the metrics Service does the same for the metrics endpoint (--metrics-cert-dir)")
		metricsSvc := find(objs, "Service", "mpiguard-metrics-service")
		Expect(argValue("metrics-cert-dir")).NotTo(BeEmpty())
		Expect(metricsSvc.GetAnnotations()).To(HaveKeyWithValue("service.beta.openshift.io/serving-cert-secret-name", mounted[argValue("metrics-cert-dir")]))
		Expect(mounted[argValue("metrics-cert-dir")]).NotTo(BeEmpty())

		By("the service CA injects its bundle into both webhook configurations")
		for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
			var n int
			for _, o := range objs {
				if o.GetKind() == kind {
					n++
					Expect(o.GetAnnotations()).To(HaveKeyWithValue("service.beta.openshift.io/inject-cabundle", "true"), kind)
				}
			}
			Expect(n).To(Equal(1), kind)
		}
	})

	It("config/openshift names OpenShift's DNS and has a ServiceMonitor that verifies mpiguard's certificate and authenticates", func() {
		objs := build("config/openshift")
		deployment := into[appsv1.Deployment](find(objs, "Deployment", "mpiguard-controller"))
		Expect(deployment.Spec.Template.Spec.Containers[0].Args).To(ContainElements(
			"--network-policy-dns=openshift-dns/dns.operator.openshift.io/daemonset-dns=default",
			"--network-policy-dns-ports=5353"))

		By("mpiguard's own NetworkPolicy lets it reach OpenShift's DNS pods on 5353")
		policy := into[networkingv1.NetworkPolicy](find(objs, "NetworkPolicy", "mpiguard-controller"))
		var egress [][]string
		for _, rule := range policy.Spec.Egress {
			var ports []string
			for _, p := range rule.Ports {
				ports = append(ports, string(ptr.Deref(p.Protocol, corev1.ProtocolTCP))+"/"+p.Port.String())
			}
			egress = append(egress, ports)
		}
		Expect(egress).To(ContainElement(ConsistOf("UDP/5353", "TCP/5353")))

		By("the ServiceMonitor scrapes the metrics Service over HTTPS with the service CA and the scraper's token")
		var monitor struct {
			Spec struct {
				Endpoints []struct {
					Port          string `json:"port"`
					Scheme        string `json:"scheme"`
					Authorization struct {
						Type        string `json:"type"`
						Credentials keyRef `json:"credentials"`
					} `json:"authorization"`
					TLSConfig struct {
						CA struct {
							ConfigMap keyRef `json:"configMap"`
						} `json:"ca"`
						ServerName         string `json:"serverName"`
						InsecureSkipVerify bool   `json:"insecureSkipVerify"`
					} `json:"tlsConfig"`
					BearerTokenFile string `json:"bearerTokenFile"`
				} `json:"endpoints"`
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
			} `json:"spec"`
		}
		m := find(objs, "ServiceMonitor", "mpiguard-controller-metrics-monitor")
		Expect(m.GetNamespace()).To(Equal(installNamespace))
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(m.Object, &monitor)).To(Succeed())
		metricsSvc := into[corev1.Service](find(objs, "Service", "mpiguard-metrics-service"))
		Expect(metricsSvc.Labels).To(Equal(mergeLabels(metricsSvc.Labels, monitor.Spec.Selector.MatchLabels)), "the monitor selects the metrics Service")
		Expect(monitor.Spec.Endpoints).To(HaveLen(1))
		ep := monitor.Spec.Endpoints[0]
		Expect(metricsSvc.Spec.Ports).To(ContainElement(HaveField("Name", ep.Port)))
		Expect(ep.Scheme).To(Equal("https"))
		Expect(ep.BearerTokenFile).To(BeEmpty(), "user-workload monitoring rejects ServiceMonitors that read Prometheus' files")
		Expect(ep.TLSConfig.InsecureSkipVerify).To(BeFalse())
		Expect(ep.TLSConfig.CA.ConfigMap.Name).To(Equal("openshift-service-ca.crt"))
		Expect(ep.TLSConfig.CA.ConfigMap.Key).To(Equal("service-ca.crt"))
		Expect(ep.TLSConfig.ServerName).To(Equal(metricsSvc.Name + "." + metricsSvc.Namespace + ".svc"))

		By("the token is a ServiceAccount's that may get /metrics")
		Expect(ep.Authorization.Type).To(Equal("Bearer"))
		Expect(ep.Authorization.Credentials.Key).To(Equal("token"))
		secret := into[corev1.Secret](find(objs, "Secret", ep.Authorization.Credentials.Name))
		Expect(secret.Type).To(Equal(corev1.SecretTypeServiceAccountToken))
		sa := secret.Annotations[corev1.ServiceAccountNameKey]
		find(objs, "ServiceAccount", sa)
		var bound bool
		for _, o := range objs {
			if o.GetKind() != "ClusterRoleBinding" {
				continue
			}
			role, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			for _, s := range subjects {
				s := s.(map[string]any)
				if role == "mpiguard-metrics-reader" && s["kind"] == "ServiceAccount" && s["name"] == sa && s["namespace"] == installNamespace {
					bound = true
				}
			}
		}
		Expect(bound).To(BeTrue(), "ServiceAccount %s is bound to the mpiguard-metrics-reader ClusterRole", sa)
		reader := find(objs, "ClusterRole", "mpiguard-metrics-reader")
		rules, _, _ := unstructured.NestedSlice(reader.Object, "rules")
		Expect(rules).To(ContainElement(And(HaveKeyWithValue("nonResourceURLs", ContainElement("/metrics")), HaveKeyWithValue("verbs", ContainElement("get")))))
	})

	It("make deploy-openshift, as docs/operations.md shows it, is accepted by an apiserver without cert-manager", func(ctx context.Context) {
		dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
		Expect(err).NotTo(HaveOccurred())
		groups, err := dc.ServerGroups()
		Expect(err).NotTo(HaveOccurred())
		for _, g := range groups.Groups {
			Expect(g.Name).NotTo(Equal("cert-manager.io"), "this apiserver must not know cert-manager")
		}
		cmds := commandsFor(documentedCommands("docs/operations.md", "Installing on OpenShift"), "deploy-openshift")
		Expect(cmds).NotTo(BeEmpty(), "docs/operations.md shows no `make deploy-openshift` in its OpenShift install section")
		ensureNamespace(ctx)
		expectDeploys(ctx, cmds, "config/openshift")
	})

	It("make deploy, deploy-openshift, install-yaml and docker-build refuse to run without IMG, and apply nothing", func(ctx context.Context) {
		// No mpiguard image is published: an image no registry has would
		// leave the fail-closed webhooks refusing every TrainJob create.
		for _, cmd := range []string{"make deploy DRY_RUN=server", "make deploy-openshift DRY_RUN=server", "make install-yaml", "make docker-build", "make deploy IMG= DRY_RUN=server"} {
			By(cmd)
			stdout, stderr, err := runResult(ctx, cmd)
			Expect(err).To(HaveOccurred(), "%s ran without an image:\n%s", cmd, stdout)
			Expect(stderr).To(ContainSubstring("IMG is not set: no mpiguard image is published"), cmd)
			Expect(stderr).To(ContainSubstring("IMG=registry.example.com/mpiguard:v0.1.0"), "%s says how to set it", cmd)
			Expect(stdout).NotTo(ContainSubstring("serverside-applied"), "%s applied something", cmd)
			Expect(stdout).NotTo(ContainSubstring("kind:"), "%s printed objects", cmd)
		}
	})

	It("make deploy, as the README shows it, is accepted once cert-manager's CRDs are installed", func(ctx context.Context) {
		installCertManagerCRDs()
		cmds := commandsFor(documentedCommands("README.md", "Installing on a cluster"), "deploy")
		Expect(cmds).NotTo(BeEmpty(), "the README shows no `make deploy` in its install section")
		ensureNamespace(ctx)
		expectDeploys(ctx, cmds, "config/default")
	})

	helmSpecs()

	It("make undeploy and undeploy-openshift, as documented, delete everything but the shared openreports.io CRDs", func(ctx context.Context) {
		cmds := append(commandsFor(documentedCommands("README.md", "Installing on a cluster"), "undeploy"),
			commandsFor(documentedCommands("docs/operations.md", "Installing on OpenShift"), "undeploy-openshift")...)
		Expect(cmds).To(ContainElements("make undeploy", "make undeploy-openshift"))
		needKubectl()

		By("installing both for real, so that there is something to delete")
		ensureNamespace(ctx)
		defaults, openshift := build("config/default"), build("config/openshift")
		apply(ctx, defaults)
		apply(ctx, openshift)
		// The undeploys are dry runs: what this spec applied (under the
		// test's own field manager) goes afterwards, so a later spec's real
		// `make deploy` finds the cluster as a real one would be, not with
		// fields another manager owns.
		DeferCleanup(func(ctx context.Context) {
			for _, o := range append(append([]*unstructured.Unstructured{}, defaults...), openshift...) {
				// CRDs stay: a CRD being deleted cannot be applied again
				// at once, and equal values are never a conflict.
				if o.GetKind() != "Namespace" && o.GetKind() != "CustomResourceDefinition" {
					Expect(client.IgnoreNotFound(env.Client.Delete(ctx, o.DeepCopy()))).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
				}
			}
		})

		for _, cmd := range cmds {
			want := defaults
			if strings.HasSuffix(cmd, "-openshift") {
				want = openshift
			}
			By("running it: " + cmd)
			Expect(objectsIn(runDocumented(ctx, cmd), deletedLine)).To(ConsistOf(keys(want, sharedCRDs...)))
		}
		By("a dry run deleted nothing")
		for _, o := range defaults {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.GroupVersionKind())
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(o), got)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
			Expect(got.GetDeletionTimestamp()).To(BeNil(), "%s %s", o.GetKind(), o.GetName())
		}
	})

	It("the restore command of docs/operations.md re-applies config/default with the image that runs, not the default one", func(ctx context.Context) {
		cmds := documentedCommands("docs/operations.md", "Restoring the webhooks")
		Expect(cmds).To(HaveLen(2), "docs/operations.md \"Restoring the webhooks\": the running image read into img, then make deploy")
		deploy := commandsFor(cmds, "deploy")
		Expect(deploy).To(HaveLen(1), "docs/operations.md \"Restoring the webhooks\" shows no `make deploy`")
		needKubectl()

		const running = "registry.example.com/mpiguard:v0.0.9"
		By("a cluster where make deploy installed mpiguard with an image of its own, " + running)
		installCertManagerCRDs()
		ensureNamespace(ctx)
		run(ctx, "make --no-print-directory deploy IMG="+running)
		installed := build("config/default")

		By("what the documented lines apply is config/default with that image")
		printed := strings.Replace(deploy[0], "make deploy", "make --no-print-directory install-yaml", 1)
		expectImageOnly(decodeYAML(run(ctx, cmds[0]+"\n"+printed)), build("config/default"), running)

		By("running them: " + strings.Join(cmds, "; "))
		Expect(objectsIn(run(ctx, cmds[0]+"\n"+deploy[0]+" DRY_RUN=server"), appliedLine)).To(ConsistOf(keys(installed)))

		By("on OpenShift, the documented make deploy-openshift with the same image applies config/openshift with it")
		openshift := strings.Replace(deploy[0], "make deploy", "make deploy-openshift", 1)
		doc, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "docs/operations.md"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(doc)).To(ContainSubstring("`"+openshift+"`"),
			"docs/operations.md \"Restoring the webhooks\" does not say to run %q on OpenShift", openshift)
		printed = strings.Replace(openshift, "make deploy-openshift", "make --no-print-directory install-yaml DEPLOY_CONFIG=config/openshift", 1)
		expectImageOnly(decodeYAML(run(ctx, cmds[0]+"\n"+printed)), build("config/openshift"), running)
		Expect(objectsIn(run(ctx, cmds[0]+"\n"+openshift+" DRY_RUN=server"), appliedLine)).To(ConsistOf(keys(build("config/openshift"))))
	})

	It("changed no file of config/, docs/ or the README, so make verify stays clean", func() {
		Expect(treeHash()).To(Equal(before))
	})
})

// installCertManagerCRDs installs cert-manager's CRDs (config/default's
// Certificate and Issuer need them); again is harmless.
func installCertManagerCRDs() {
	GinkgoHelper()
	certManagerCRDs, err := framework.CertManagerCRDs()
	Expect(err).NotTo(HaveOccurred())
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{certManagerCRDs}, ErrorIfPathMissing: true})
	Expect(err).NotTo(HaveOccurred())
}

// keyRef is a key of a Secret or ConfigMap, as a ServiceMonitor names it.
type keyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

func mergeLabels(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// expectDeploys checks each documented deploy command of config: what
// `make install-yaml` renders for its image is config with only the image
// changed, the apiserver accepts it (dry run), and the command as written
// applies exactly those objects (server-side dry run).
func expectDeploys(ctx context.Context, cmds []string, config string) {
	GinkgoHelper()
	want := build(config)
	for _, cmd := range cmds {
		By("what it applies is " + config + " with the image set: " + cmd)
		img := imageOf(cmd)
		rendered := decodeYAML(run(ctx, "make --no-print-directory install-yaml DEPLOY_CONFIG="+config+" IMG="+img))
		expectImageOnly(rendered, want, img)
		apply(ctx, rendered, client.DryRunAll)

		needKubectl()
		By("running it: " + cmd)
		Expect(objectsIn(runDocumented(ctx, cmd), appliedLine)).To(ConsistOf(keys(want)))
	}
}
