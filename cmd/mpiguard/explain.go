//go:build !checkonly

package main

import (
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/follow"
)

func init() { registerSubcommand(newExplainCommand) }

func newExplainCommand() *cobra.Command {
	var l liveFlags
	cmd := &cobra.Command{
		Use:   "explain NAMESPACE/JOB",
		Short: "Say where an MPI TrainJob is and why: its admission, reservation, pods by role, and why they wait or failed",
		Long: `explain reads the cluster kubectl would talk to (KUBECONFIG, ~/.kube/config or
the in-cluster account; --kubeconfig and --context as kubectl) and prints, for
one MPI TrainJob: its admission (mpiguard's webhooks, Kueue's Workload and its
admission checks), the quota mpiguard reserves for it, its Launcher and Worker
pods with their state, and the reasons the follower puts in Events on the
TrainJob (why its pods wait, which pod failed and why), decided by the same
code (internal/jobstate).

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
			return follow.Explain(cmd.Context(), c, l.mpiguardNS, client.ObjectKey{Namespace: ns, Name: name}, cmd.OutOrStdout())
		},
	}
	l.register(cmd.Flags())
	return cmd
}
