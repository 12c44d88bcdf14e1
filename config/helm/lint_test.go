package helm_test

import (
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/mpiguard/mpiguard/test/framework"
)

// `helm lint --strict` through Helm's library, with the defaults, with each
// certificate mode and with every optional object: no warning, no error (the
// INFO "icon is recommended" is allowed).
func TestChartLint(t *testing.T) {
	dir := filepath.Join(framework.RepoRoot(), framework.HelmChart)
	cases := map[string]map[string]any{"optional objects": {
		"serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true},
		"grafanaDashboard": map[string]any{"enabled": true},
		"namespace":        map[string]any{"create": true}, "policyParameters": map[string]any{"policies": map[string]any{}},
		"clientAuth": map[string]any{"enabled": true, "caSecret": "client-ca"},
	}}
	for name, values := range valuesPerMode {
		cases[name] = values
	}
	for name, values := range cases {
		t.Run(name, func(t *testing.T) {
			linter := lint.All(dir, framework.WithImage(values), namespace, true)
			for _, m := range linter.Messages {
				if m.Severity > support.InfoSev {
					t.Errorf("helm lint: %s", m)
				}
			}
		})
	}
}
