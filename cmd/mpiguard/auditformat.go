//go:build !checkonly

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/internal/audit"
)

// auditFinding is one result as json/yaml print it.
type auditFinding struct {
	Namespace        string `json:"namespace,omitempty"`
	Kind             string `json:"kind"`
	Name             string `json:"name"`
	Policy           string `json:"policy"`
	Result           string `json:"result"`
	Message          string `json:"message,omitempty"`
	Field            string `json:"field,omitempty"`
	PolicySetVersion string `json:"policySetVersion,omitempty"`
}

type auditSummary struct {
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Warn  int `json:"warn"`
	Error int `json:"error"`
}

type auditOutput struct {
	Summary  auditSummary   `json:"summary"`
	Findings []auditFinding `json:"results"`
}

func findings(results []audit.Result) auditOutput {
	out := auditOutput{Findings: []auditFinding{}}
	for _, r := range results {
		out.Findings = append(out.Findings, auditFinding{
			Namespace: r.Object.Namespace, Kind: r.Object.Kind, Name: r.Object.Name,
			Policy: r.Policy, Result: string(r.Status), Message: r.Message, Field: r.Field,
			PolicySetVersion: r.PolicySetVersion,
		})
		switch r.Status {
		case audit.Pass:
			out.Summary.Pass++
		case audit.Fail:
			out.Summary.Fail++
		case audit.Warn:
			out.Summary.Warn++
		default:
			out.Summary.Error++
		}
	}
	return out
}

// writeAudit prints results as a table (violations, warnings and errors;
// passes with showPass) followed by a summary line, or every result as json
// or yaml.
func writeAudit(w io.Writer, format string, results []audit.Result, showPass bool) error {
	out := findings(results)
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case "yaml":
		b, err := yaml.Marshal(out)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tOBJECT\tPOLICY\tRESULT\tMESSAGE")
	for _, f := range out.Findings {
		if f.Result == string(audit.Pass) && !showPass {
			continue
		}
		ns := f.Namespace
		if ns == "" {
			ns = "-" // cluster-scoped
		}
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\n", ns, f.Kind, f.Name, f.Policy, f.Result, oneLine(f.Message))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := out.Summary
	_, err := fmt.Fprintf(w, "%d results: %d fail, %d warn, %d error, %d pass\n", len(out.Findings), s.Fail, s.Warn, s.Error, s.Pass)
	return err
}

// oneLine keeps a message on its table row.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// auditExitCode: 2 when an object could not be judged, 1 when a policy
// fails, 0 otherwise.
func auditExitCode(results []audit.Result) int {
	code := 0
	for _, r := range results {
		switch r.Status {
		case audit.Error:
			return 2
		case audit.Fail:
			code = 1
		}
	}
	return code
}
