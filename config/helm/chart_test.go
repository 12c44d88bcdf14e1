// Package helm_test keeps mpiguard's Helm chart (config/helm/mpiguard) and
// its kustomize install (config/default) one install: rendered with default
// values, the chart is config/default object by object, so neither can change
// alone. It also lints the chart with Helm's own linter, in process.
package helm_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mpiguard/mpiguard/test/framework"
)

const (
	release   = "mpiguard"
	namespace = "mpiguard-system"
)

// helmLabels are the labels the chart adds to every object that config/
// does not have: Helm's and the recommended instance/version labels. They
// must differ: config/ knows no release, chart version or app version.
var helmLabels = []string{
	"helm.sh/chart",
	"app.kubernetes.io/managed-by",
	"app.kubernetes.io/instance",
	"app.kubernetes.io/version",
}

// kustomizeLabels are config/default's common labels, which Helm cannot put on
// the CRDs of a chart's crds/ folder: Helm installs those files verbatim,
// untemplated. They are config/crd's files as `make manifests` writes them.
var kustomizeLabels = []string{"app.kubernetes.io/name", "app.kubernetes.io/part-of"}

func key(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

func byKey(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		if _, dup := out[key(o)]; dup {
			t.Errorf("two objects %s", key(o))
		}
		out[key(o)] = o.Object
	}
	return out
}

func dropLabels(o *unstructured.Unstructured, names []string) {
	labels := o.GetLabels()
	for _, l := range names {
		delete(labels, l)
	}
	if len(labels) == 0 {
		unstructured.RemoveNestedField(o.Object, "metadata", "labels")
		return
	}
	o.SetLabels(labels)
}

func renderChart(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := framework.HelmTemplate(release, namespace, framework.WithImage(values))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := framework.KustomizeBuild(dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// normaliseChart removes from the chart's render what must differ from
// config/, and nothing else: Helm's labels (helmLabels).
func normaliseChart(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	for _, o := range objs {
		dropLabels(o, helmLabels)
	}
	return objs
}

// normaliseKustomize removes from config/default's build what the chart
// renders differently by design, and nothing else:
//   - the Namespace: `helm install --create-namespace` creates it (the chart
//     renders it only with namespace.create, checked in
//     TestChartNamespaceIsKustomizes);
//   - the common labels on CRDs (kustomizeLabels).
func normaliseKustomize(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace":
			continue
		case "CustomResourceDefinition":
			dropLabels(o, kustomizeLabels)
		}
		out = append(out, o)
	}
	return out
}

func TestChartDefaultsAreConfigDefault(t *testing.T) {
	chart := byKey(t, normaliseChart(renderChart(t, nil)))
	want := byKey(t, normaliseKustomize(kustomize(t, "config/default")))
	if len(chart) == 0 || len(want) == 0 {
		t.Fatalf("rendered %d chart objects and %d kustomize objects", len(chart), len(want))
	}
	for k, w := range want {
		c, ok := chart[k]
		if !ok {
			t.Errorf("config/default has %s, the chart does not: add it to config/helm/mpiguard/templates", k)
			continue
		}
		if diff := cmp.Diff(w, c); diff != "" {
			t.Errorf("%s: the chart (default values) differs from config/default (-kustomize +chart):\n%s", k, diff)
		}
	}
	for k := range chart {
		if _, ok := want[k]; !ok {
			t.Errorf("the chart renders %s by default, config/default does not", k)
		}
	}
}

// With namespace.create, the chart's Namespace is config/default's.
func TestChartNamespaceIsKustomizes(t *testing.T) {
	var chartNS, kustomizeNS map[string]any
	for _, o := range normaliseChart(renderChart(t, map[string]any{"namespace": map[string]any{"create": true}})) {
		if o.GetKind() == "Namespace" {
			chartNS = o.Object
		}
	}
	for _, o := range kustomize(t, "config/default") {
		if o.GetKind() == "Namespace" {
			kustomizeNS = o.Object
		}
	}
	if kustomizeNS == nil {
		t.Fatal("config/default has no Namespace")
	}
	if diff := cmp.Diff(kustomizeNS, chartNS); diff != "" {
		t.Errorf("the chart's Namespace (namespace.create=true) differs from config/default's (-kustomize +chart):\n%s", diff)
	}
	for _, o := range renderChart(t, nil) {
		if o.GetKind() == "Namespace" {
			t.Errorf("the chart renders the Namespace by default: helm install --create-namespace would refuse it")
		}
	}
}

// Both installs: each Certificate is issued by an Issuer they install
// (config/default once named one that did not exist, after namePrefix).
func TestCertificatesNameTheirIssuer(t *testing.T) {
	for name, objs := range map[string][]*unstructured.Unstructured{
		"config/default": kustomize(t, "config/default"),
		"chart":          renderChart(t, nil),
	} {
		issuers := map[string]bool{}
		var certs []*unstructured.Unstructured
		for _, o := range objs {
			switch o.GetKind() {
			case "Issuer":
				issuers[o.GetNamespace()+"/"+o.GetName()] = true
			case "Certificate":
				certs = append(certs, o)
			}
		}
		if len(certs) == 0 {
			t.Errorf("%s: no Certificate", name)
		}
		for _, c := range certs {
			issuer, _, _ := unstructured.NestedString(c.Object, "spec", "issuerRef", "name")
			if !issuers[c.GetNamespace()+"/"+issuer] {
				t.Errorf("%s: Certificate %s names Issuer %q, which it does not install", name, c.GetName(), issuer)
			}
		}
	}
}

func TestChartHasNoStaleCopies(t *testing.T) {
	// crds/ and files/role.yaml are copies `make manifests` writes; the
	// comparison above already fails when they are stale, this names the fix.
	chart := map[string]bool{}
	for _, o := range renderChart(t, nil) {
		if o.GetKind() == "CustomResourceDefinition" {
			chart[o.GetName()] = true
		}
	}
	for _, o := range kustomize(t, "config/crd") {
		if !chart[o.GetName()] {
			t.Errorf("config/helm/mpiguard/crds has no CRD %s: run make manifests", o.GetName())
		}
	}
	if t.Failed() {
		return
	}
	if !strings.HasPrefix(framework.HelmChart, "config/") {
		t.Errorf("the chart must stay under config/ (make verify compares config/)")
	}
}

// personaRoles are the ClusterRoles of docs/operations.md "Roles for teams",
// by name after the prefix, with the aggregation label each carries ("" for
// none: the admins' roles must not reach the built-in admin, edit or view).
var personaRoles = map[string]string{
	"job-author":         "rbac.authorization.k8s.io/aggregate-to-edit",
	"namespace-operator": "rbac.authorization.k8s.io/aggregate-to-admin",
	"viewer":             "rbac.authorization.k8s.io/aggregate-to-view",
	"runtime-reader":     "",
	"runtime-admin":      "",
	"policy-admin":       "",
}

// Both installs ship the personas' ClusterRoles, with the same rules and
// aggregation labels (TestChartDefaultsAreConfigDefault compares them whole;
// this names what is missing).
func TestBothInstallsShipThePersonaRoles(t *testing.T) {
	installs := map[string][]*unstructured.Unstructured{
		"config/default": kustomize(t, "config/default"),
		"chart":          renderChart(t, nil),
	}
	rules := map[string]map[string]any{}
	for install, objs := range installs {
		rules[install] = map[string]any{}
		for _, o := range objs {
			if o.GetKind() == "ClusterRole" {
				rules[install][o.GetName()] = o.Object["rules"]
			}
		}
		for role, aggregation := range personaRoles {
			name := release + "-" + role
			var found *unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() == "ClusterRole" && o.GetName() == name {
					found = o
				}
			}
			if found == nil {
				t.Errorf("%s ships no ClusterRole %s", install, name)
				continue
			}
			var aggregations []string
			for label := range found.GetLabels() {
				if strings.HasPrefix(label, "rbac.authorization.k8s.io/aggregate-to-") {
					aggregations = append(aggregations, label)
				}
			}
			var want []string
			if aggregation != "" {
				want = []string{aggregation}
			}
			if diff := cmp.Diff(want, aggregations); diff != "" {
				t.Errorf("%s: ClusterRole %s aggregates into the wrong built-in roles (-want +got):\n%s", install, name, diff)
			}
		}
	}
	for role := range personaRoles {
		name := release + "-" + role
		if diff := cmp.Diff(rules["config/default"][name], rules["chart"][name]); diff != "" {
			t.Errorf("ClusterRole %s: the chart's rules differ from config/default's (-kustomize +chart):\n%s", name, diff)
		}
	}
}
