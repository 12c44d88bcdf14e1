package helm_test

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/test/framework"
)

// valuesPerMode are the certificate modes' values, as docs/operations.md
// shows them; the install suite applies each render to a real apiserver.
var valuesPerMode = map[string]map[string]any{
	"certManager": nil,
	"selfSigned":  {"certificates": map[string]any{"mode": "selfSigned"}},
	"openshift":   openshiftValues(),
	"existingSecret": {"certificates": map[string]any{"mode": "existingSecret", "existingSecret": map[string]any{
		"name": "my-webhook-cert", "caBundle": base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\n")),
	}}},
}

func openshiftValues() map[string]any {
	v, err := framework.HelmValuesFile("values-openshift.yaml")
	if err != nil {
		panic(err)
	}
	return v
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("the render has no %s %s", kind, name)
	return nil
}

func into[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func deployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	return into[appsv1.Deployment](t, find(t, objs, "Deployment", "mpiguard-controller"))
}

// webhooks returns every webhook of both configurations as unstructured maps.
func webhooks(t *testing.T, objs []*unstructured.Unstructured) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, o := range objs {
		if o.GetKind() == "MutatingWebhookConfiguration" || o.GetKind() == "ValidatingWebhookConfiguration" {
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, h := range hooks {
				out = append(out, h.(map[string]any))
			}
		}
	}
	if len(out) != 5 {
		t.Fatalf("%d webhooks rendered, want 5", len(out))
	}
	return out
}

func TestSelfSignedCertificates(t *testing.T) {
	objs := renderChart(t, valuesPerMode["selfSigned"])
	for _, o := range objs {
		if strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") {
			t.Errorf("selfSigned renders cert-manager's %s %s", o.GetKind(), o.GetName())
		}
	}
	secret := into[corev1.Secret](t, find(t, objs, "Secret", "webhook-server-cert"))
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %q, want %q", secret.Type, corev1.SecretTypeTLS)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		t.Fatal("ca.crt holds no PEM certificate")
	}
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil {
		t.Fatal("tls.crt holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	// The apiserver calls the Service by its DNS name and trusts the caBundle.
	for _, dns := range []string{"mpiguard-webhook-service.mpiguard-system.svc", "mpiguard-webhook-service.mpiguard-system.svc.cluster.local"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: dns, Roots: pool}); err != nil {
			t.Errorf("the serving certificate is not valid for %s under ca.crt: %v", dns, err)
		}
	}
	for _, h := range webhooks(t, objs) {
		bundle, _, _ := unstructured.NestedString(h, "clientConfig", "caBundle")
		if got, _ := base64.StdEncoding.DecodeString(bundle); string(got) != string(secret.Data["ca.crt"]) {
			t.Errorf("webhook %s: caBundle is not the Secret's ca.crt", h["name"])
		}
	}
	if d := deployment(t, objs); d.Spec.Template.Spec.Volumes[0].Secret.SecretName != secret.Name {
		t.Errorf("the Deployment mounts Secret %s, not %s", d.Spec.Template.Spec.Volumes[0].Secret.SecretName, secret.Name)
	}
}

func TestExistingSecret(t *testing.T) {
	objs := renderChart(t, valuesPerMode["existingSecret"])
	if d := deployment(t, objs); d.Spec.Template.Spec.Volumes[0].Secret.SecretName != "my-webhook-cert" {
		t.Errorf("the Deployment mounts Secret %s, want my-webhook-cert", d.Spec.Template.Spec.Volumes[0].Secret.SecretName)
	}
	for _, o := range objs {
		if o.GetKind() == "Secret" || strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") {
			t.Errorf("existingSecret renders %s %s", o.GetKind(), o.GetName())
		}
	}
	for _, h := range webhooks(t, objs) {
		if bundle, _, _ := unstructured.NestedString(h, "clientConfig", "caBundle"); bundle == "" {
			t.Errorf("webhook %s has no caBundle", h["name"])
		}
	}
}

// Values a render must refuse, with a message naming the value.
func TestBadValuesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values string
		want   string
	}{
		// values.schema.json: a typo or a wrong value never falls back to a default.
		{"unknown mode", "certificates: {mode: vault}", "at '/certificates/mode': value must be one of"},
		// No image is published: the chart refuses to render without one.
		{"no image", "replicas: 2", "image.repository is not set: no mpiguard image is published"},
		{"no image tag", "image: {repository: registry.example.com/mpiguard}", "image.tag is not set"},
		{"misspelt value", "replica: 3", "'replica' not allowed"},
		{"misspelt nested value", "webhooks: {validatingTrainJob: {failurePolicy: Fail, timeout: 3, timeoutSeconds: 10}}", "'timeout' not allowed"},
		{"failure policy", "webhooks: {validatingTrainJob: {failurePolicy: fail, timeoutSeconds: 10}}", "at '/webhooks/validatingTrainJob/failurePolicy'"},
		{"timeout over the apiserver's 30 s", "webhooks: {validatingTrainJob: {failurePolicy: Fail, timeoutSeconds: 31}}", "at '/webhooks/validatingTrainJob/timeoutSeconds'"},
		{"existingSecret without name", "certificates: {mode: existingSecret, existingSecret: {caBundle: Zm9v}}", "certificates.existingSecret.name"},
		{"existingSecret without CA", "certificates: {mode: existingSecret, existingSecret: {name: s}}", "certificates.existingSecret.caBundle"},
		{"client auth without CA", "clientAuth: {enabled: true}", "clientAuth.caSecret or clientAuth.caConfigMap"},
		{"client auth with two CAs", "clientAuth: {enabled: true, caSecret: a, caConfigMap: b}", "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			if tc.name != "no image" && tc.name != "no image tag" {
				values = framework.WithImage(values)
			}
			_, err := framework.HelmTemplate(release, namespace, values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("rendering with %s: error %v, want one saying %q", tc.values, err, tc.want)
			}
		})
	}
}

func TestOpenShiftIsConfigOpenShift(t *testing.T) {
	want := byKey(t, normaliseKustomize(kustomize(t, "config/openshift")))
	chart := byKey(t, normaliseChart(renderChart(t, openshiftValues())))
	for k, w := range want {
		if diff := cmp.Diff(w, chart[k]); diff != "" {
			t.Errorf("%s: the chart (values-openshift.yaml) differs from config/openshift (-kustomize +chart):\n%s", k, diff)
		}
	}
	for k := range chart {
		if _, ok := want[k]; !ok {
			t.Errorf("the chart renders %s with values-openshift.yaml, config/openshift does not", k)
		}
	}
}

func TestClientAuth(t *testing.T) {
	objs := renderChart(t, map[string]any{"clientAuth": map[string]any{
		"enabled": true, "caConfigMap": "apiserver-client-ca", "certNames": []any{"kube-apiserver-webhook-client", "other"},
	}})
	spec := deployment(t, objs).Spec.Template.Spec
	args := spec.Containers[0].Args
	for _, want := range []string{"--client-ca=/etc/mpiguard/client-ca/ca.crt", "--client-cert-names=kube-apiserver-webhook-client,other"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "client-ca" })
	if i < 0 || spec.Volumes[i].ConfigMap == nil || spec.Volumes[i].ConfigMap.Name != "apiserver-client-ca" {
		t.Fatalf("no client-ca volume of ConfigMap apiserver-client-ca: %+v", spec.Volumes)
	}
	if !slices.ContainsFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "client-ca" && m.MountPath == "/etc/mpiguard/client-ca"
	}) {
		t.Errorf("client-ca is not mounted at /etc/mpiguard/client-ca")
	}
}

func TestValues(t *testing.T) {
	defaults := renderChart(t, nil)
	defaultArgs := deployment(t, defaults).Spec.Template.Spec.Containers[0].Args
	for _, tc := range []struct {
		name   string
		values string
		check  func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{"image", "image: {repository: registry.example.com/mpiguard, tag: v0.1.0, pullPolicy: Always}", func(t *testing.T, objs []*unstructured.Unstructured) {
			c := deployment(t, objs).Spec.Template.Spec.Containers[0]
			if c.Image != "registry.example.com/mpiguard:v0.1.0" || c.ImagePullPolicy != corev1.PullAlways {
				t.Errorf("image %s, pull policy %s", c.Image, c.ImagePullPolicy)
			}
		}},
		// resources are merged key by key over the defaults, as Helm merges
		// maps: the memory limit stays unless set to null.
		{"scheduling", "replicas: 3\npriorityClassName: system-cluster-critical\nresources: {requests: {cpu: '1'}}\naffinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [system]}]}]}}}\ntopologySpreadConstraints: []",
			func(t *testing.T, objs []*unstructured.Unstructured) {
				d := deployment(t, objs)
				s := d.Spec.Template.Spec
				if *d.Spec.Replicas != 3 || s.PriorityClassName != "system-cluster-critical" || s.Affinity == nil || s.TopologySpreadConstraints != nil ||
					s.Containers[0].Resources.Requests.Cpu().String() != "1" || s.Containers[0].Resources.Limits.Memory().String() != "1Gi" {
					t.Errorf("replicas %d, priority class %q, affinity %v, spread %v, resources %v", *d.Spec.Replicas, s.PriorityClassName, s.Affinity, s.TopologySpreadConstraints, s.Containers[0].Resources)
				}
			}},
		{"no PodDisruptionBudget", "podDisruptionBudget: {enabled: false}", func(t *testing.T, objs []*unstructured.Unstructured) {
			if slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "PodDisruptionBudget" }) {
				t.Error("a PodDisruptionBudget is rendered")
			}
		}},
		{"PodDisruptionBudget maxUnavailable", "podDisruptionBudget: {minAvailable: null, maxUnavailable: 1}", func(t *testing.T, objs []*unstructured.Unstructured) {
			spec, _, _ := unstructured.NestedMap(find(t, objs, "PodDisruptionBudget", "mpiguard-controller").Object, "spec")
			if _, ok := spec["minAvailable"]; ok || spec["maxUnavailable"] != float64(1) {
				t.Errorf("spec %v", spec)
			}
		}},
		{"webhook failure policy, timeout and exemptions", "webhooks: {exemptNamespaces: [kube-system, sandbox], validatingTrainJob: {failurePolicy: Ignore, timeoutSeconds: 7}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, h := range webhooks(t, objs) {
				policy, timeout := h["failurePolicy"], h["timeoutSeconds"]
				switch h["name"] {
				case "vtrainjob.mpiguard.io":
					if policy != "Ignore" || timeout != float64(7) {
						t.Errorf("vtrainjob: failurePolicy %v, timeoutSeconds %v", policy, timeout)
					}
				case "odelete.mpiguard.io": // only observes: never blocks a delete
					if policy != "Ignore" {
						t.Errorf("odelete: failurePolicy %v", policy)
					}
				default:
					if policy != "Fail" {
						t.Errorf("%s: failurePolicy %v changed too", h["name"], policy)
					}
				}
				exprs, _, _ := unstructured.NestedSlice(h, "namespaceSelector", "matchExpressions")
				if diff := cmp.Diff([]any{"mpiguard-system", "kube-system", "sandbox"}, exprs[0].(map[string]any)["values"]); diff != "" {
					t.Errorf("%s: exempt namespaces (-want +got):\n%s", h["name"], diff)
				}
			}
		}},
		{"components off", "curatedRuntimes: {enabled: false}\nkueue: {admissionCheck: false}\nextraArgs: [--audit=false]", func(t *testing.T, objs []*unstructured.Unstructured) {
			args := deployment(t, objs).Spec.Template.Spec.Containers[0].Args
			if diff := cmp.Diff(append(slices.Clone(defaultArgs), "--runtime-publisher=false", "--kueue-admission-check=false", "--audit=false"), args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		}},
		{"network policy peers", "networkPolicy: {webhookFrom: [{ipBlock: {cidr: 10.0.0.0/24}}], metricsFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}], apiserverTo: [{ipBlock: {cidr: 10.0.0.0/24}}]}", func(t *testing.T, objs []*unstructured.Unstructured) {
			p := into[networkingv1.NetworkPolicy](t, find(t, objs, "NetworkPolicy", "mpiguard-controller"))
			if len(p.Spec.Ingress) != 2 || p.Spec.Ingress[0].Ports[0].Port.IntValue() != 9443 || p.Spec.Ingress[0].From[0].IPBlock.CIDR != "10.0.0.0/24" ||
				p.Spec.Ingress[1].Ports[0].Port.IntValue() != 8443 || p.Spec.Ingress[1].From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" ||
				p.Spec.Egress[0].To[0].IPBlock.CIDR != "10.0.0.0/24" {
				t.Errorf("spec %+v", p.Spec)
			}
		}},
		{"no network policy", "networkPolicy: {enabled: false}", func(t *testing.T, objs []*unstructured.Unstructured) {
			if slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "NetworkPolicy" }) {
				t.Error("a NetworkPolicy is rendered")
			}
		}},
		{"ServiceMonitor", "serviceMonitor: {enabled: true, labels: {release: prometheus}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			expectConfig(t, "config/prometheus", find(t, objs, "ServiceMonitor", "mpiguard-controller-metrics-monitor"))
		}},
		{"PrometheusRule", "prometheusRule: {enabled: true, labels: {release: prometheus}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			expectConfig(t, "config/prometheus", find(t, objs, "PrometheusRule", "mpiguard-alerts"))
		}},
		{"Grafana dashboard", "grafanaDashboard: {enabled: true, labels: {release: prometheus}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			expectConfig(t, "config/grafana", find(t, objs, "ConfigMap", "mpiguard-dashboard"))
		}},
		{"Grafana dashboard in Grafana's namespace, in a folder", "grafanaDashboard: {enabled: true, namespace: monitoring, annotations: {grafana_folder: mpiguard}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			cm := find(t, objs, "ConfigMap", "mpiguard-dashboard")
			if cm.GetNamespace() != "monitoring" || cm.GetAnnotations()["grafana_folder"] != "mpiguard" || cm.GetLabels()["grafana_dashboard"] != "1" {
				t.Errorf("namespace %q, annotations %v, labels %v", cm.GetNamespace(), cm.GetAnnotations(), cm.GetLabels())
			}
		}},
		{"PrometheusRule of another release", "fullnameOverride: guard\nprometheusRule: {enabled: true}", func(t *testing.T, objs []*unstructured.Unstructured) {
			data, err := yaml.Marshal(find(t, objs, "PrometheusRule", "guard-alerts").Object["spec"])
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(data), `job="guard-metrics-service"`); n == 0 || strings.Contains(string(data), "mpiguard-metrics-service") {
				t.Errorf("the alerts select job guard-metrics-service %d times, and still mpiguard-metrics-service: %v", n, strings.Contains(string(data), "mpiguard-metrics-service"))
			}
		}},
		{"policy parameters", "policyParameters: {policies: {max-duration: {enforcement: warn, parameters: {maxHours: 72}}}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			cm := into[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "mpiguard-parameters"))
			if cm.Labels["mpiguard.io/policy"] != "parameters" {
				t.Errorf("labels %v", cm.Labels)
			}
			var got map[string]any
			if err := yaml.Unmarshal([]byte(cm.Data["parameters.yaml"]), &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"policies": map[string]any{"max-duration": map[string]any{"enforcement": "warn", "parameters": map[string]any{"maxHours": float64(72)}}}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("parameters.yaml (-want +got):\n%s", diff)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			objs := renderChart(t, values)
			if len(objs) == 0 {
				t.Fatal("nothing rendered")
			}
			tc.check(t, objs)
		})
	}
}

// expectConfig checks that the chart's o (its labels from values aside) is
// the object of its kind of the optional kustomization dir (config/prometheus,
// config/grafana) as config/default would install it (namespace, namePrefix
// and labels), the way the README says to add it.
func expectConfig(t *testing.T, dir string, o *unstructured.Unstructured) {
	t.Helper()
	dropLabels(o, append(slices.Clone(helmLabels), "release"))
	for _, want := range kustomize(t, dir) {
		if want.GetKind() == o.GetKind() {
			want.SetNamespace(namespace)
			want.SetName("mpiguard-" + want.GetName())
			labels := want.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels["app.kubernetes.io/name"], labels["app.kubernetes.io/part-of"] = "mpiguard", "mpiguard"
			want.SetLabels(labels)
			if diff := cmp.Diff(want.Object, o.Object); diff != "" {
				t.Errorf("the chart's %s differs from %s's as config/default would add it (-kustomize +chart):\n%s", o.GetKind(), dir, diff)
			}
			return
		}
	}
	t.Fatalf("%s has no %s", dir, o.GetKind())
}
