//go:build !checkonly

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/mpiguard/mpiguard/internal/check"
	"github.com/mpiguard/mpiguard/internal/convert"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

func init() { registerSubcommand(newConvertCommand) }

type convertOptions struct {
	files       []string
	cluster     []string
	gang        string
	runtimeName string
	policies    string
	parameters  string
}

func newConvertCommand() *cobra.Command {
	var o convertOptions
	cmd := &cobra.Command{
		Use:   "convert -f MPIJOB.yaml",
		Short: "Convert MPI Operator v2beta1 MPIJobs into TrainJobs and judge them as admission would",
		Long: `convert reads the MPI Operator's kubeflow.org/v2beta1 MPIJobs (multi-document
YAML or JSON; "-" is standard input) and writes, for each, a TrainingRuntime that
carries the MPIJob's Launcher and Worker pod templates and a TrainJob that runs
on it, to standard output, ready for kubectl apply.

On standard error it says, field by field, what it mapped, what has no
equivalent in the Kubeflow Trainer, what the Trainer does differently, and
which fields of the input it does not know (they are not converted). Then it
judges each TrainJob with the policies as "mpiguard check" does, in a cluster of
the converted documents, the documents of --cluster (Namespaces,
ResourceQuotas, ...) and mpiguard's curated runtimes, and prints the verdict.

The MPIJob does not record which gang scheduler the MPI Operator ran with
(its --gang-scheduling flag): say it with --gang-scheduler to carry
runPolicy.schedulingPolicy over. docs/migration.md is the mapping.

Exit status: 0 every TrainJob admitted, 1 any denied, 2 unreadable input or
an MPIJob the Trainer cannot run.`,
		Example: `  mpiguard convert -f pi.yaml > pi-trainjob.yaml
  mpiguard convert -f mpijob.yaml --gang-scheduler volcano --cluster team-a.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConvert(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "MPIJob file to read, - for stdin (repeatable)")
	f.StringArrayVar(&o.cluster, "cluster", nil, "manifest file or directory of the cluster to judge in, as check -f reads (repeatable)")
	f.StringVar(&o.gang, "gang-scheduler", "", "the MPI Operator's gang scheduler: volcano, scheduler-plugins, or none")
	f.StringVar(&o.runtimeName, "runtime-name", "", "name of the TrainingRuntime written (default <mpijob>-mpijob)")
	f.StringVar(&o.policies, "policies", "", policiesFlagUsage)
	f.StringVar(&o.parameters, "parameters", "", parametersFlagUsage)
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runConvert(ctx context.Context, o convertOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	gang := o.gang
	if gang == "none" {
		gang = convert.GangNone
	}
	var docs []convert.Document
	for _, f := range o.files {
		read, err := readMPIJobs(f, stdin)
		if err != nil {
			return &exitError{2, err}
		}
		docs = append(docs, read...)
	}
	if o.runtimeName != "" && len(docs) > 1 {
		return &exitError{2, fmt.Errorf("--runtime-name names one runtime; the input has %d MPIJobs", len(docs))}
	}
	curated, err := catalog.Load()
	if err != nil {
		return &exitError{2, err}
	}
	var converted bytes.Buffer
	for _, d := range docs {
		res, err := convert.Convert(d.Job, d.Unknown, convert.Options{Gang: gang, RuntimeName: o.runtimeName, Curated: curated})
		if err != nil {
			return &exitError{2, fmt.Errorf("%s: MPIJob %s: %w", d.Source, d.Job.Metadata.Name, err)}
		}
		fmt.Fprintf(stderr, "MPIJob %s (%s) → %s %s, TrainJob %s\n", d.Job.Metadata.Name, d.Source, *res.TrainJob.Spec.RuntimeRef.Kind, res.TrainJob.Spec.RuntimeRef.Name, res.TrainJob.Name)
		for _, n := range res.Notes {
			fmt.Fprintf(stderr, "  %s\n", n)
		}
		if err := convert.WriteYAML(&converted, d.Source, res); err != nil {
			return &exitError{2, err}
		}
	}
	if _, err := stdout.Write(converted.Bytes()); err != nil {
		return &exitError{2, err}
	}

	// Judge the TrainJobs as admission would.
	cluster := check.NewCluster()
	for _, f := range o.cluster {
		if err := cluster.ReadPath(f, stdin); err != nil {
			return &exitError{2, err}
		}
	}
	ev, err := evaluatorFromFlags(ctx, o.policies, o.parameters, "mpiguard-convert")
	if err != nil {
		return &exitError{2, err}
	}
	results, err := convert.Judge(ctx, ev, cluster, converted.Bytes(), curated)
	if err != nil {
		return &exitError{2, err}
	}
	fmt.Fprintln(stderr, "Admission (mpiguard check):")
	if err := check.WriteText(stderr, results, false); err != nil {
		return &exitError{2, err}
	}
	if code := check.ExitCode(results); code != 0 {
		return &exitError{code, fmt.Errorf("%s", map[int]string{1: "some converted TrainJobs would be denied", 2: "some converted TrainJobs could not be evaluated"}[code])}
	}
	return nil
}

// readMPIJobs reads the MPIJobs of file f, or of stdin for "-".
func readMPIJobs(f string, stdin io.Reader) ([]convert.Document, error) {
	if f == "-" {
		return convert.Read("<stdin>", stdin)
	}
	file, err := os.Open(f)
	if err != nil {
		return nil, err
	}
	defer file.Close() //nolint:errcheck // read-only
	return convert.Read(f, file)
}
