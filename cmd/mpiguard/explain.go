//go:build !checkonly

package main

import (
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/follow"
	"github.com/mpiguard/mpiguard/internal/pipeline"
)

func init() { registerSubcommand(newExplainCommand) }

func newExplainCommand() *cobra.Command {
	var (
		l                    liveFlags
		policies, parameters string
	)
	cmd := &cobra.Command{
		Use:   "explain NAMESPACE/JOB",
		Short: "Say where an MPI TrainJob is and why: its admission, reservation, pods by role, and why they wait or failed",
		Long: `explain reads the cluster kubectl would talk to (KUBECONFIG, ~/.kube/config or
the in-cluster account; --kubeconfig and --context as kubectl) and prints, for
one MPI TrainJob: its admission (mpiguard's webhooks, Kueue's Workload and its
admission checks), what the policies say of its next write ("Policies now"),
the quota mpiguard reserves for it, its Launcher and Worker
pods with their state, and the reasons the follower puts in Events on the
TrainJob (why its pods wait, which pod failed and why), decided by the same
code (internal/diagnosis).

"Policies now" judges the stored job as audit does: a job that waits for its
pods (a suspended job, as Kueue keeps a queued one) as its resume, the write
that starts its pods, with the quota policies, against its namespace's
ResourceQuotas and what admitted jobs hold of them; a running job as it is
stored. The policies are the embedded ones (or --policies/--parameters, as for
check), not the ones a running mpiguard loaded from its ConfigMaps. A user who
may not read mpiguard's QuotaReservations gets the verdict without them and a
note saying so.

Exit status: 0 printed, 1 the job cannot be read (missing, no access).`,
		Example: `  mpiguard explain nlp-team/llama-70b
  mpiguard explain llama-70b --context prod   # the context's namespace`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := l.connect()
			if err != nil {
				return err
			}
			name := args[0]
			if before, after, ok := strings.Cut(name, "/"); ok {
				ns, name = before, after
			}
			if ns == "" {
				ns = "default"
			}
			ev, err := evaluatorFromFlags(cmd.Context(), policies, parameters, "mpiguard-explain")
			if err != nil {
				return err
			}
			judge := pipeline.New(ev.Renderer, ev.Engine)
			return follow.Explain(cmd.Context(), c, judge, l.mpiguardNS, client.ObjectKey{Namespace: ns, Name: name}, cmd.OutOrStdout())
		},
	}
	l.register(cmd.Flags())
	cmd.Flags().StringVar(&policies, "policies", "", policiesFlagUsage)
	cmd.Flags().StringVar(&parameters, "parameters", "", parametersFlagUsage)
	return cmd
}
