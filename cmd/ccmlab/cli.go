package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// version is set by the linker (make build).
var version = "dev"

// run builds the command tree and executes it. Errors are returned, not
// printed, so main prints exactly one line for each failure.
func run(ctx context.Context, args []string) error {
	root := newRootCommand(os.Stdout, os.Stderr)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	opts := defaultServeOptions()
	root := &cobra.Command{
		Use:   "ccmlab",
		Short: "A teaching lab for the Kubernetes cloud-controller-manager",
		Long: `ccmlab runs a real Kubernetes control plane, a simulated cloud and an embedded
cloud-controller-manager in one process, and serves a web view of them.

Without a subcommand it behaves like "ccmlab serve".`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), opts, stdout)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	opts.addFlags(root.Flags())
	// Flag errors get the same one-line treatment as every other error.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w (see ccmlab --help)", err)
	})

	serveOpts := defaultServeOptions()
	serveCmd := &cobra.Command{
		Use:   "serve",
		Short: "Start the lab (the default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), serveOpts, stdout)
		},
	}
	serveOpts.addFlags(serveCmd.Flags())

	root.AddCommand(serveCmd, newKubectlCommand(), newClassroomCommand(stdout), newReplayCommand(stdout), newCurlCommand(stdout, stderr), newLBsCommand(stdout), &cobra.Command{
		Use:   "version",
		Short: "Print the ccmlab version and the Kubernetes version it embeds",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(stdout, "ccmlab %s (Kubernetes %s)\n", version, kubernetesVersion)
		},
	})
	return root
}
