// Package prometheus_test unit-tests mpiguard's alerts (rule.yaml) with
// Prometheus' own tools: `promtool check rules` and `promtool test rules`
// over rule_test.yaml, with promtool built from the pinned Prometheus module
// (the module proxy, like every other tool the tests use).
package prometheus_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/test/framework"
)

// Prometheus' Go module (its v3.x releases are tagged v0.3xx.y). Built with
// remove_all_sd: promtool's rule tests need no service discovery plugin.
const (
	prometheusModule  = "github.com/prometheus/prometheus"
	prometheusVersion = "v0.316.0"
)

var (
	promtoolOnce sync.Once
	promtoolPath string
	promtoolErr  error
)

// promtool returns the path of promtool: $MPIGUARD_PROMTOOL (`make
// test-unit` builds it first, `make promtool`, outside the test's timeout),
// else built once into mpiguard's cache ($MPIGUARD_CACHE, else
// ~/.cache/mpiguard) per version.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MPIGUARD_PROMTOOL"); p != "" {
		return p
	}
	promtoolOnce.Do(func() {
		cache := os.Getenv("MPIGUARD_CACHE")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				promtoolErr = err
				return
			}
			cache = filepath.Join(home, ".cache", "mpiguard")
		}
		dir := filepath.Join(cache, "promtool-"+prometheusVersion)
		promtoolPath = filepath.Join(dir, "promtool")
		if _, err := os.Stat(promtoolPath); err == nil {
			return
		}
		t.Logf("building promtool %s into %s (once)", prometheusVersion, dir)
		cmd := exec.Command("go", "install", "-tags", "remove_all_sd", prometheusModule+"/cmd/promtool@"+prometheusVersion)
		// Outside this module, so its go.mod and go.sum stay as they are.
		cmd.Dir = os.TempDir()
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOBIN="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			promtoolErr = err
			t.Logf("%s", out)
		}
	})
	if promtoolErr != nil {
		t.Fatalf("building promtool: %v", promtoolErr)
	}
	return promtoolPath
}

// rule is the PrometheusRule of rule.yaml, as much as the tests read.
type rule struct {
	Spec struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

func readRule(t *testing.T) (rule, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "config", "prometheus", "rule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var r rule
	if err := yaml.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	// promtool reads a Prometheus rule file: the PrometheusRule's spec.
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	spec, err := yaml.Marshal(obj["spec"])
	if err != nil {
		t.Fatal(err)
	}
	return r, spec
}

// The Makefile's promtool (make test-unit) is the version this test pins.
func TestMakefilePinsThisPromtool(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "PROMTOOL_VERSION ?= " + prometheusVersion + "\n"; !strings.Contains(string(data), want) {
		t.Errorf("the Makefile does not set %q", strings.TrimSpace(want))
	}
}

// TestAlertRules runs promtool check rules and promtool test rules.
func TestAlertRules(t *testing.T) {
	_, spec := readRule(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), spec, 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "config", "prometheus", "rule_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rule_test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rule_test.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestEveryAlertIsTestedAndHasARunbook: each alert has a test where it fires
// and one where it stays silent, and its runbook_url names a section of
// docs/operations.md.
func TestEveryAlertIsTestedAndHasARunbook(t *testing.T) {
	r, _ := readRule(t)
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "config", "prometheus", "rule_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &tests); err != nil {
		t.Fatal(err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	anchors := headingAnchors(t, filepath.Join(framework.RepoRoot(), "docs", "operations.md"))
	var n int
	for _, g := range r.Spec.Groups {
		for _, rl := range g.Rules {
			if rl.Alert == "" {
				continue
			}
			n++
			if !fires[rl.Alert] {
				t.Errorf("rule_test.yaml has no test in which %s fires", rl.Alert)
			}
			if !silent[rl.Alert] {
				t.Errorf("rule_test.yaml has no test in which %s stays silent", rl.Alert)
			}
			url := rl.Annotations["runbook_url"]
			_, anchor, _ := strings.Cut(url, "docs/operations.md#")
			if anchor == "" || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q names no section of docs/operations.md", rl.Alert, url)
			}
		}
	}
	if n == 0 {
		t.Fatal("rule.yaml has no alert")
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a Markdown file.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	punct := regexp.MustCompile("[^a-z0-9 _-]")
	anchors := map[string]bool{}
	fenced := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		anchors[strings.ReplaceAll(punct.ReplaceAllString(title, ""), " ", "-")] = true
	}
	return anchors
}
