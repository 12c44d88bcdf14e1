// Command floor is the start-up floor under `mpiguard check` and `gator
// test` that make bench-peers prints beside them: a Go program that reads the
// same manifests (-f, files or directories, multi-document YAML), compiles one
// small Rego policy with OPA's compiler and evaluates it once per TrainJob,
// printing a JSON list with one result per TrainJob. It renders nothing,
// validates no schema and knows no quota: what any Go tool that judges
// TrainJobs with OPA costs before it does the work either tool does.
//
//	go run ./test/load/peers/floor -f DIR [-f ...]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// policy is one rule over one TrainJob: a deadline over two days is denied.
const policy = `package floor

deny contains msg if {
	input.spec.activeDeadlineSeconds > 172800
	msg := sprintf("%s/%s: activeDeadlineSeconds %d is over 172800", [input.metadata.namespace, input.metadata.name, input.spec.activeDeadlineSeconds])
}
`

type result struct {
	TrainJob string   `json:"trainJob"`
	Allowed  bool     `json:"allowed"`
	Denials  []string `json:"denials,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(2)
	}
}

func run() error {
	files := pflag.StringArrayP("filename", "f", nil, "manifest file or directory (repeatable)")
	pflag.Parse()
	ctx := context.Background()
	query, err := rego.New(rego.Query("data.floor.deny"), rego.Module("floor.rego", policy)).PrepareForEval(ctx)
	if err != nil {
		return err
	}
	var results []result
	denied := false
	for _, root := range *files {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for doc := range bytes.SplitSeq(data, []byte("\n---\n")) {
				var obj map[string]any
				if err := yaml.Unmarshal(doc, &obj); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				if obj["kind"] != "TrainJob" {
					continue
				}
				rs, err := query.Eval(ctx, rego.EvalInput(obj))
				if err != nil {
					return err
				}
				meta, _ := obj["metadata"].(map[string]any)
				r := result{TrainJob: fmt.Sprintf("%v/%v", meta["namespace"], meta["name"]), Allowed: true}
				for _, x := range rs {
					for _, e := range x.Expressions {
						for _, m := range e.Value.([]any) {
							r.Denials = append(r.Denials, fmt.Sprint(m))
						}
					}
				}
				r.Allowed = len(r.Denials) == 0
				denied = denied || !r.Allowed
				results = append(results, r)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		return err
	}
	if denied {
		os.Exit(1)
	}
	return nil
}
