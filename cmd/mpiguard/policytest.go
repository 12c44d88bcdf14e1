//go:build !checkonly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/mpiguard/mpiguard/internal/check"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/policies"
)

func init() { registerSubcommand(newPolicyCommand) }

func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Work with mpiguard's Rego policies",
	}
	cmd.AddCommand(newPolicyTestCommand())
	for _, sub := range policySubcommands {
		cmd.AddCommand(sub())
	}
	return cmd
}

// policySubcommands are the policy subcommands besides test, each added by
// its file's init.
var policySubcommands []func() *cobra.Command

func registerPolicySubcommand(f func() *cobra.Command) {
	policySubcommands = append(policySubcommands, f)
}

// policyTestOptions are the flags of policy test.
type policyTestOptions struct {
	verbose    bool
	update     bool
	parameters string
}

func newPolicyTestCommand() *cobra.Command {
	var o policyTestOptions
	cmd := &cobra.Command{
		Use:   "test [DIR]",
		Short: "Run the policies' Rego unit tests and sample suites",
		Long: `test runs, for the embedded policies or the policies tree in DIR (one folder per
policy: its .rego, _test.rego and samples/), laid over the embedded ones as
check --policies does (a policy of an embedded package replaces it, others are
added, and DIR's tests can import data.mpiguard.lib):

  1. the Rego unit tests (test_* rules) with OPA's tester; a policy folder
     without tests fails;
  2. every sample through the real renderer and engine, compared with its .want
     file; allowed-*.yaml must be allowed, denied-*.yaml must be denied by the
     folder's own policy (warned-*.yaml: allowed with its warning, for a policy
     that only warns), and every folder needs both, so a policy that matches
     nothing fails.

Paths are printed as DIR/<policy>/samples/<file>, usable from where the
command was typed. With --update, a sample whose only failure is its .want
file (missing, or differing from what check prints now) gets the file
written from the output; review the change (git diff) before committing it.
--update needs DIR: the embedded policies are read-only.

Exit status: 0 all pass (or every failure was a .want file --update wrote),
1 any failure, 2 the policies cannot be loaded.`,
		Example: `  mpiguard policy test
  mpiguard policy test ./my-policies -v
  mpiguard policy test ./my-policies --update
  mpiguard policy test ./my-policies --parameters prod-parameters.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := ""
			if len(args) == 1 {
				dir = args[0]
			}
			return runPolicyTestWith(cmd.Context(), dir, o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "list passing tests and samples too")
	cmd.Flags().BoolVar(&o.update, "update", false, "write the .want file of every sample that fails only on it (missing or differing) from what check prints now")
	cmd.Flags().StringVar(&o.parameters, "parameters", "", parametersFlagUsage+"; the samples are judged with them")
	return cmd
}

func runPolicyTest(ctx context.Context, dir string, verbose bool, out io.Writer) error {
	return runPolicyTestWith(ctx, dir, policyTestOptions{verbose: verbose}, out)
}

func runPolicyTestWith(ctx context.Context, dir string, o policyTestOptions, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	verbose := o.verbose
	if o.update && dir == "" {
		return &exitError{2, errors.New("--update needs DIR, the policies folder whose .want files to write (the embedded policies are read-only): mpiguard policy test --update DIR")}
	}
	var fsys fs.FS = policies.FS
	var base map[string]string // the embedded policies DIR does not replace
	if dir != "" {
		if _, err := os.Stat(dir); err != nil {
			return &exitError{2, err}
		}
		if onePolicysFolder(dir) {
			parent := filepath.Join(dir, "..")
			return &exitError{2, fmt.Errorf("%s is one policy's folder (its Rego and samples/): give the policies folder that holds it, as its samples are found at <policy>/samples: mpiguard policy test %s", dir, parent)}
		}
		fsys = os.DirFS(dir)
		embedded, err := engine.DefaultPolicySet()
		if err != nil {
			return &exitError{2, err}
		}
		own, err := loadPolicyDir(dir)
		if err != nil {
			return &exitError{2, err}
		}
		if base, err = embedded.Unreplaced(own.Modules); err != nil {
			return &exitError{2, err}
		}
	}
	failed := 0

	tests, err := check.RunRegoTestsOver(ctx, fsys, base)
	if err != nil {
		return &exitError{2, err}
	}
	for _, r := range tests {
		switch {
		case !r.Pass():
			failed++
			why := "the test rule is false"
			if r.Error != nil {
				why = r.Error.Error()
			}
			fmt.Fprintf(out, "FAIL rego %s.%s (%v): %s\n", r.Package, r.Name, r.Location, why)
		case verbose:
			fmt.Fprintf(out, "PASS rego %s.%s\n", r.Package, r.Name)
		}
	}

	ev, err := evaluatorFromFlags(ctx, dir, o.parameters, "mpiguard-policy-test")
	if err != nil {
		return &exitError{2, err}
	}
	cases, err := check.RunSamples(ctx, fsys, ev)
	if err != nil {
		return &exitError{2, err}
	}
	for _, c := range cases {
		// As typed: DIR/<policy>/samples/<file>, or the embedded tree's path.
		file := filepath.Join(dir, filepath.FromSlash(c.File))
		switch {
		case o.update && c.OnlyWantDiffers():
			want := filepath.Join(dir, filepath.FromSlash(c.WantFile))
			if err := os.WriteFile(want, []byte(c.Got), 0o644); err != nil {
				return &exitError{2, err}
			}
			fmt.Fprintf(out, "UPDATED %s\n", want)
		case c.Failed():
			failed++
			fmt.Fprintf(out, "FAIL sample %s\n", file)
			for _, f := range c.Failures {
				fmt.Fprintf(out, "  %s\n", f)
			}
			if c.MissingWant || c.WantDiffers {
				fmt.Fprintf(out, "  to write the .want files from this output (then review them): %s\n", updateCommand(dir, o.parameters))
			}
		case verbose:
			fmt.Fprintf(out, "PASS sample %s\n", file)
		}
	}
	fmt.Fprintf(out, "%d Rego tests, %d samples, %d failed\n", len(tests), len(cases), failed)
	if failed > 0 {
		return &exitError{1, fmt.Errorf("%d policy tests failed", failed)}
	}
	return nil
}

// onePolicysFolder says whether dir is one policy's folder (Rego modules and
// a samples folder of its own) rather than a policies tree of such folders.
func onePolicysFolder(dir string) bool {
	if info, err := os.Stat(filepath.Join(dir, "samples")); err != nil || !info.IsDir() {
		return false
	}
	rego, _ := filepath.Glob(filepath.Join(dir, "*.rego"))
	return len(rego) > 0
}

// updateCommand is the policy test command that writes the .want files of
// the policies tree dir (the embedded one, from the repository root, when
// dir is empty), as typed.
func updateCommand(dir, parameters string) string {
	if dir == "" {
		dir = "policies"
	}
	cmd := "mpiguard policy test --update " + dir
	if parameters != "" {
		cmd += " --parameters " + parameters
	}
	return cmd
}
