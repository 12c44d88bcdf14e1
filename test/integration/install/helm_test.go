package install

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mpiguard/mpiguard/test/framework"
)

// helmInstall is a documented `helm install` of mpiguard's chart, as Helm's
// CLI reads it.
type helmInstall struct {
	release, namespace string
	values             map[string]any
}

var helmCommand = regexp.MustCompile(`^helm install `)

// parseHelmInstall reads a documented `helm install RELEASE CHART [flags]`
// as Helm does: -f files merged in order, then each --set over them. The
// chart must be framework.HelmChart, and --create-namespace is required (the
// chart does not render its namespace by default: Helm stores the release in
// it first).
func parseHelmInstall(cmd string) helmInstall {
	GinkgoHelper()
	Expect(strings.ContainsAny(cmd, `"'\`)).To(BeFalse(), "%q: quoted arguments are not read here", cmd)
	args := strings.Fields(cmd)
	Expect(len(args)).To(BeNumerically(">=", 4), "%q: helm install RELEASE CHART ...", cmd)
	Expect(args[3]).To(Equal(framework.HelmChart), "%q installs another chart", cmd)
	in := helmInstall{release: args[2], namespace: "default", values: map[string]any{}}
	var sets []string
	createNamespace := false
	for i := 4; i < len(args); i++ {
		next := func() string {
			GinkgoHelper()
			Expect(i+1).To(BeNumerically("<", len(args)), "%q: %s takes a value", cmd, args[i])
			i++
			return args[i]
		}
		switch a := args[i]; a {
		case "--namespace", "-n":
			in.namespace = next()
		case "--create-namespace":
			createNamespace = true
		case "-f", "--values":
			file, err := chartutil.ReadValuesFile(filepath.Join(framework.RepoRoot(), next()))
			Expect(err).NotTo(HaveOccurred(), cmd)
			in.values = chartutil.CoalesceTables(file.AsMap(), in.values)
		case "--set":
			sets = append(sets, next())
		default:
			Fail(cmd + ": flag " + a + " is not read here")
		}
	}
	for _, s := range sets {
		Expect(strvals.ParseInto(s, in.values)).To(Succeed(), "%q: --set %s", cmd, s)
	}
	Expect(createNamespace).To(BeTrue(), "%q: without --create-namespace Helm cannot store the release in a new namespace", cmd)
	return in
}

// helmSpecs are the install suite's specs for the Helm chart, run after
// `make deploy`'s, which installs cert-manager's CRDs.
func helmSpecs() {
	It("helm install, as the README shows it, is accepted by the apiserver for each certificate mode", func(ctx context.Context) {
		cmds := documentedCommands("README.md", "Installing with Helm")
		var installs []string
		for _, c := range cmds {
			if helmCommand.MatchString(c) {
				installs = append(installs, c)
			}
		}
		Expect(installs).NotTo(BeEmpty(), "the README shows no `helm install` in its Helm section")
		// The default mode's Issuer and Certificate (already there after
		// `make deploy`'s spec; installed again when this one runs alone).
		certManagerCRDs, err := framework.CertManagerCRDs()
		Expect(err).NotTo(HaveOccurred())
		_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{certManagerCRDs}, ErrorIfPathMissing: true})
		Expect(err).NotTo(HaveOccurred())
		modes := map[string]bool{}
		ensureNamespace(ctx)
		for _, cmd := range installs {
			By("rendering and applying (server-side dry run) " + cmd)
			in := parseHelmInstall(cmd)
			Expect(in.release).To(Equal("mpiguard"))
			Expect(in.namespace).To(Equal(installNamespace))
			objs, err := framework.HelmTemplate(in.release, in.namespace, in.values)
			Expect(err).NotTo(HaveOccurred())
			mode, _, _ := unstructured.NestedString(in.values, "certificates", "mode")
			if mode == "" {
				mode = "certManager"
			}
			modes[mode] = true

			By("the image is the one the command sets")
			image := find(objs, "Deployment", "mpiguard-controller")
			repo, _, _ := unstructured.NestedString(in.values, "image", "repository")
			Expect(repo).NotTo(BeEmpty(), "%q sets no image.repository", cmd)
			Expect(into[appsv1.Deployment](image).Spec.Template.Spec.Containers[0].Image).To(HavePrefix(repo + ":"))

			apply(ctx, objs, client.DryRunAll)
		}
		Expect(modes).To(HaveKey("certManager"))
		Expect(modes).To(HaveKey("selfSigned"))
		Expect(modes).To(HaveKey("openshift"))
	})

	It("the chart's optional objects are accepted by the apiserver: ServiceMonitor, PrometheusRule, Grafana dashboard, policy parameters, client-ca, NetworkPolicy peers", func(ctx context.Context) {
		values := map[string]any{}
		for _, set := range []string{
			"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "grafanaDashboard.enabled=true",
			"policyParameters.policies.max-duration.enforcement=warn",
			"clientAuth.enabled=true", "clientAuth.caConfigMap=apiserver-client-ca", "clientAuth.certNames={kube-apiserver-webhook-client}",
			"networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring",
			"namespace.create=true",
			"image.repository=registry.example.com/mpiguard", "image.tag=v0.1.0",
		} {
			Expect(strvals.ParseInto(set, values)).To(Succeed(), set)
		}
		objs, err := framework.HelmTemplate("mpiguard", installNamespace, values)
		Expect(err).NotTo(HaveOccurred())
		for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap", "Namespace"} {
			Expect(objs).To(ContainElement(HaveField("Object", HaveKeyWithValue("kind", kind))), kind)
		}
		ensureNamespace(ctx)
		apply(ctx, objs, client.DryRunAll)
	})
}
