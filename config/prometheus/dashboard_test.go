package prometheus_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/test/framework"
)

// grafanaVariables are what Grafana puts in place of the dashboard's
// variables before it sends a query: the interval ones, and the template
// variables' "All" values (config/grafana/mpiguard.json's templating).
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "5m", "$__interval", "1m", "$__range", "6h",
	"$job", ".+", "$namespace", ".*",
)

// TestDashboard: config/grafana/mpiguard.json parses, every panel but a row
// has a title, a description and at least one query, and every query is
// PromQL that Prometheus' own parser accepts (promtool check rules, each
// query as a recording rule). This test lives beside the alerts' because it
// runs the same promtool.
func TestDashboard(t *testing.T) {
	d, err := framework.ReadDashboard()
	if err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("the dashboard has title %q and uid %q; Grafana's sidecar keys it by uid", d.Title, d.UID)
	}
	type record struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var records []record
	ids := map[int]string{}
	for _, p := range d.Panels {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q have the same id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || p.Description == "" {
			t.Errorf("panel %d has title %q and description %q: each says what it shows", p.ID, p.Title, p.Description)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q: query %s is empty", p.Title, q.RefID)
				continue
			}
			records = append(records, record{Record: fmt.Sprintf("panel_%d_%s", p.ID, q.RefID), Expr: grafanaVariables.Replace(q.Expr)})
		}
	}
	if len(records) == 0 {
		t.Fatal("the dashboard has no query")
	}
	file, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": records}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yaml"), file, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool(t), "check", "rules", "dashboard.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}
}
