package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/mpiguard/mpiguard/policies/engine"
	"github.com/mpiguard/mpiguard/policies/offline"
	"github.com/mpiguard/mpiguard/policies/render"
)

func init() { registerSubcommand(newCheckCommand) }

// exitError carries check's exit code: 1 denied, 2 unreadable or invalid input.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) ExitCode() int { return e.code }

type checkOptions struct {
	files       []string
	policies    string
	parameters  string
	showPatches bool
	output      string
}

func newCheckCommand() *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use:   "check -f FILE|DIR [-f ...]",
		Short: "Evaluate TrainJob manifests offline exactly as admission would",
		Long: `check reads manifests (multi-document YAML or JSON; a directory is read
recursively; "-" is standard input). Together they form the cluster: Namespaces,
ResourceQuotas (their status.used honoured), LimitRanges, RuntimeClasses,
ClusterTrainingRuntimes and TrainingRuntimes. Every TrainJob among them is
evaluated as a CREATE in that context, with the same renderer, engine and
policies as the webhooks (the same pipeline function): mutated first, then
validated. TrainJobs earlier in the input that admission lets through and that
start pods (not suspended) count against quotas, MPI or not.

Exit status: 0 all allowed, 1 any denied, 2 unreadable or invalid input.`,
		Example: `  mpiguard check -f cluster.yaml -f jobs/
  kubectl get trainjob my-job -o yaml | mpiguard check -f cluster/ -f -
  mpiguard check -f samples/ --show-patches -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCheck(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "manifest file or directory to read, - for stdin (repeatable)")
	f.StringVar(&o.policies, "policies", "", "directory of Rego policies to use instead of the embedded ones (its parameters.yaml, if any, is used)")
	f.StringVar(&o.parameters, "parameters", "", "parameters YAML to use instead of the default parameters")
	f.BoolVar(&o.showPatches, "show-patches", false, "also print the mutations admission would apply")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runCheck(ctx context.Context, o checkOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.output != "text" && o.output != "json" {
		return &exitError{2, fmt.Errorf("--output %q: want text or json", o.output)}
	}
	set, err := policySetFromFlags(o.policies, o.parameters)
	if err != nil {
		return &exitError{2, err}
	}
	cluster := offline.NewCluster()
	for _, f := range o.files {
		if err := cluster.ReadPath(f, stdin); err != nil {
			return &exitError{2, err}
		}
	}
	for _, ignored := range cluster.Ignored {
		fmt.Fprintf(stderr, "note: ignored %s (no decision depends on this kind)\n", ignored)
	}
	if len(cluster.TrainJobs) == 0 {
		return &exitError{2, errors.New("no TrainJob found in the input")}
	}
	eng, err := engine.New(ctx, set, engine.Options{})
	if err != nil {
		return &exitError{2, err}
	}
	rnd, err := render.NewRenderer(ctx)
	if err != nil {
		return &exitError{2, err}
	}
	results, err := (&offline.Evaluator{Engine: eng, Renderer: rnd, User: "mpiguard-check"}).Evaluate(ctx, cluster)
	if err != nil {
		return &exitError{2, err}
	}
	if o.output == "json" {
		err = offline.WriteJSON(stdout, results)
	} else {
		err = offline.WriteText(stdout, results, o.showPatches)
	}
	if err != nil {
		return &exitError{2, err}
	}
	if code := offline.ExitCode(results); code != 0 {
		return &exitError{code, fmt.Errorf("%s", map[int]string{1: "some TrainJobs are denied", 2: "some TrainJobs could not be evaluated"}[code])}
	}
	return nil
}

// policySetFromFlags returns the embedded policy set, or the one of --policies,
// with the parameters of --parameters when given.
func policySetFromFlags(dir, parametersFile string) (engine.PolicySet, error) {
	var set engine.PolicySet
	var err error
	if dir == "" {
		set, err = engine.DefaultPolicySet()
	} else {
		params := ""
		if _, statErr := os.Stat(dir + "/parameters.yaml"); statErr == nil {
			params = "parameters.yaml"
		}
		set, err = engine.LoadPolicySet(os.DirFS(dir), params)
	}
	if err != nil {
		return engine.PolicySet{}, err
	}
	if parametersFile != "" {
		data, err := os.ReadFile(parametersFile)
		if err != nil {
			return engine.PolicySet{}, err
		}
		if set.Parameters, err = engine.ParseParameters(data); err != nil {
			return engine.PolicySet{}, fmt.Errorf("%s: %w", parametersFile, err)
		}
	}
	return set, nil
}
