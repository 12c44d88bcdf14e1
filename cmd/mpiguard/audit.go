//go:build !checkonly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/audit"
)

func init() { registerSubcommand(newAuditCommand) }

type auditOptions struct {
	liveFlags
	namespace  string
	all        bool
	output     string
	showPass   bool
	policies   string
	parameters string
}

func newAuditCommand() *cobra.Command {
	var o auditOptions
	cmd := &cobra.Command{
		Use:   "audit [-n NAMESPACE | -A]",
		Short: "Judge the TrainJobs and runtimes stored in a live cluster by today's policies",
		Long: `audit reads the cluster kubectl would talk to (KUBECONFIG, ~/.kube/config or the
in-cluster account; --kubeconfig and --context as kubectl) and runs every MPI
TrainJob that has not finished, every TrainingRuntime and (with -A) every
ClusterTrainingRuntime through the admission pipeline, as the audit controller
does: a running job as it is stored, a job waiting for pods as a resume ("would
it fit if it started now", against the live quotas and reservations).

The policies are the embedded ones (or --policies/--parameters, as for check),
not the ones a running mpiguard loaded from its ConfigMaps: point --policies at
the same directory to judge with the cluster's set.

The table lists violations, warnings and errors (--show-pass adds passes);
json and yaml list every result. Progress goes to standard error.

Exit status: 0 no violation, 1 any policy fails, 2 the cluster could not be
read or an object could not be judged.`,
		Example: `  mpiguard audit -A
  mpiguard audit -n team-a -o json
  mpiguard audit -A --policies ./policies --parameters params.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAudit(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	o.register(f)
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace to audit (default: the context's namespace)")
	f.BoolVarP(&o.all, "all-namespaces", "A", false, "audit every namespace and the ClusterTrainingRuntimes")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	f.BoolVar(&o.showPass, "show-pass", false, "also list passing results in the table")
	f.StringVar(&o.policies, "policies", "", policiesFlagUsage)
	f.StringVar(&o.parameters, "parameters", "", parametersFlagUsage)
	return cmd
}

func runAudit(ctx context.Context, o auditOptions, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	switch o.output {
	case "table", "json", "yaml":
	default:
		return &exitError{2, fmt.Errorf("--output %q: want table, json or yaml", o.output)}
	}
	if o.all && o.namespace != "" {
		return &exitError{2, errors.New("--namespace and --all-namespaces exclude each other")}
	}
	c, defaultNS, err := o.connect()
	if err != nil {
		return &exitError{2, err}
	}
	ev, err := evaluatorFromFlags(ctx, o.policies, o.parameters, "mpiguard-audit")
	if err != nil {
		return &exitError{2, err}
	}
	a := o.auditor(c, ev)
	namespaces := []string{o.namespace}
	if o.namespace == "" && !o.all {
		namespaces = []string{defaultNS}
	}
	if o.all {
		if namespaces, err = auditedNamespaces(ctx, c, o.mpiguardNS); err != nil {
			return &exitError{2, err}
		}
	}
	var results []audit.Result
	for i, ns := range namespaces {
		rs, err := a.Namespace(ctx, ns)
		if err != nil {
			return &exitError{2, err}
		}
		results = append(results, rs...)
		if o.all {
			fmt.Fprintf(stderr, "audited %d/%d namespaces (%s)\n", i+1, len(namespaces), ns)
		}
	}
	if o.all {
		rs, err := a.ClusterRuntimes(ctx)
		if err != nil {
			return &exitError{2, err}
		}
		results = append(rs, results...)
	}
	if err := writeAudit(stdout, o.output, results, o.showPass); err != nil {
		return &exitError{2, err}
	}
	if code := auditExitCode(results); code != 0 {
		return &exitError{code, errors.New(map[int]string{1: "some objects violate the policies", 2: "some objects could not be judged"}[code])}
	}
	return nil
}

// auditedNamespaces lists the namespaces -A audits: all but those the audit
// controller skips, mpiguard's own (the webhooks govern neither) and those
// being deleted.
func auditedNamespaces(ctx context.Context, c client.Reader, mpiguardNS string) ([]string, error) {
	var list corev1.NamespaceList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing the namespaces: %w", err)
	}
	skip := map[string]bool{mpiguardNS: true}
	for _, ns := range audit.DefaultOptions().SkipNamespaces {
		skip[ns] = true
	}
	var out []string
	for _, ns := range list.Items {
		// A namespace being deleted is not governed any more (the audit
		// controller writes nothing there either).
		if !skip[ns.Name] && ns.DeletionTimestamp == nil {
			out = append(out, ns.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}
