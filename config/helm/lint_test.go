package helm_test

import (
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/mpiguard/mpiguard/test/framework"
)

// `helm lint --strict` through Helm's library, with the defaults and with each
// certificate mode: no warning, no error (the INFO "icon is recommended" is
// allowed).
func TestChartLint(t *testing.T) {
	dir := filepath.Join(framework.RepoRoot(), framework.HelmChart)
	for name, values := range valuesPerMode {
		t.Run(name, func(t *testing.T) {
			linter := lint.All(dir, values, namespace, true)
			for _, m := range linter.Messages {
				if m.Severity > support.InfoSev {
					t.Errorf("helm lint: %s", m)
				}
			}
		})
	}
}
