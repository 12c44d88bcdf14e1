// Command mpiguard is the admission and policy webhook suite and runtime template
// manager for MPI TrainJobs (Kubeflow Trainer v2). One binary, several subcommands.
//
// Built with -tags checkonly (make build's bin/mpiguard-check) it has the
// check subcommand only, the same code: every other subcommand's file is
// marked //go:build !checkonly, so the manager, webhooks and controllers are
// not linked and a check starts with fewer pages and less initialisation
// (TestCheckOnlyBuildLinksNoServer).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := newRootCommand()
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "mpiguard:", err)
		os.Exit(exitCode(err))
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "mpiguard",
		Short: "Admission policies and runtime templates for MPI TrainJobs",
		Long: "mpiguard guards MPI TrainJobs (Kubeflow Trainer v2): validating and mutating webhooks\n" +
			"run Rego policies over what a job will really create, and a controller manages curated\n" +
			"MPI runtimes and per-job NetworkPolicies.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	return root
}

// subcommands lists the constructors of every subcommand; each lives in a file of its own
// and registers itself here from an init function, so adding one touches no shared code.
var subcommands []func() *cobra.Command

func registerSubcommand(f func() *cobra.Command) { subcommands = append(subcommands, f) }

// exitCoder lets a subcommand choose the process exit code (check: 1 denied, 2 bad input).
type exitCoder interface{ ExitCode() int }

func exitCode(err error) int {
	if ec, ok := err.(exitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}
