package framework

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Where mpiguard's alerts and dashboard are (config/prometheus, config/grafana).
var (
	AlertRulesFile = filepath.Join("config", "prometheus", "rule.yaml")
	DashboardFile  = filepath.Join("config", "grafana", "mpiguard.json")
)

// monitoredName picks the series names out of a PromQL expression:
// mpiguard's, controller-runtime's, the kube-apiserver's and kube-state-
// metrics' (the rest are PromQL functions and keywords, labels, or
// Prometheus' own `up`).
var monitoredName = regexp.MustCompile(`\b(?:mpiguard|controller_runtime|apiserver|kube)_[a-z0-9_]+\b`)

// Dashboard is as much of a Grafana dashboard's JSON as the tests read.
type Dashboard struct {
	Title  string           `json:"title"`
	UID    string           `json:"uid"`
	Panels []DashboardPanel `json:"panels"`
}

// DashboardPanel is a panel, or a row holding panels (Panels) when collapsed.
type DashboardPanel struct {
	ID          int              `json:"id"`
	Type        string           `json:"type"`
	Title       string           `json:"title"`
	Description string           `json:"description"`
	Targets     []PanelTarget    `json:"targets"`
	Panels      []DashboardPanel `json:"panels"`
}

// PanelTarget is one query of a panel.
type PanelTarget struct {
	RefID string `json:"refId"`
	Expr  string `json:"expr"`
}

// ReadDashboard reads config/grafana/mpiguard.json; its rows' panels are
// flattened into Panels after their row.
func ReadDashboard() (*Dashboard, error) {
	data, err := os.ReadFile(filepath.Join(RepoRoot(), DashboardFile))
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", DashboardFile, err)
	}
	var flat []DashboardPanel
	for _, p := range d.Panels {
		flat = append(flat, p)
		flat = append(flat, p.Panels...)
	}
	d.Panels = flat
	return &d, nil
}

// AlertRules is as much of config/prometheus/rule.yaml as the tests read.
type AlertRules struct {
	Spec struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// MonitoredMetrics returns every series name mpiguard's alerts and
// dashboard panels read, each with who reads it ("alert X", "panel Y").
func MonitoredMetrics() (map[string][]string, error) {
	data, err := os.ReadFile(filepath.Join(RepoRoot(), AlertRulesFile))
	if err != nil {
		return nil, err
	}
	var rules AlertRules
	if err := yaml.Unmarshal(data, &rules); err != nil {
		return nil, fmt.Errorf("%s: %w", AlertRulesFile, err)
	}
	out := map[string][]string{}
	add := func(expr, reader string) {
		for _, n := range monitoredName.FindAllString(expr, -1) {
			if !slices.Contains(out[n], reader) {
				out[n] = append(out[n], reader)
			}
		}
	}
	for _, g := range rules.Spec.Groups {
		for _, r := range g.Rules {
			add(r.Expr, "alert "+r.Alert)
		}
	}
	d, err := ReadDashboard()
	if err != nil {
		return nil, err
	}
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			add(t.Expr, fmt.Sprintf("panel %q", p.Title))
		}
	}
	return out, nil
}

// ServedByManager says whether metric name is one mpiguard's manager serves
// on its /metrics (its own and controller-runtime's), not another
// component's (the kube-apiserver's, kube-state-metrics').
func ServedByManager(name string) bool {
	return strings.HasPrefix(name, "mpiguard_") || strings.HasPrefix(name, "controller_runtime_")
}

// ServedByFollower says whether a metric is one of the job follower's
// (internal/follow): served once MPI TrainJobs' pods ran and ended, which
// the follow suite's cluster does (KWOK nodes) and the admission suite's
// does not.
func ServedByFollower(name string) bool {
	return name == "mpiguard_jobs" || strings.HasPrefix(name, "mpiguard_job_")
}
