//go:build !checkonly

package main

import (
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
)

func init() { registerSubcommand(newServeCommand) }

func newServeCommand() *cobra.Command {
	opts := app.DefaultServeOptions()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the webhook server and controllers (in-cluster or against a kubeconfig)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			app.SetupLogging(opts.Log)
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return err
			}
			return app.Serve(ctrl.SetupSignalHandler(), cfg, opts)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}
