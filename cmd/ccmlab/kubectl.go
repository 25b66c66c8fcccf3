package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/component-base/logs"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
)

// newKubectlCommand embeds kubectl so a student needs nothing else. It
// defaults to the lab's kubeconfig (CCMLAB_DATA_DIR, else ./.ccmlab) unless
// --kubeconfig or KUBECONFIG say otherwise.
func newKubectlCommand() *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true)
	if os.Getenv("KUBECONFIG") == "" {
		path := filepath.Join(dataDir(), "kubeconfig")
		configFlags.KubeConfig = &path
	}
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	cmd := kubectlcmd.NewKubectlCommand(kubectlcmd.KubectlOptions{
		ConfigFlags: configFlags.WithWarningPrinter(streams),
		IOStreams:   streams,
	})
	// The kubectl binary gets -v, --vmodule and --log-flush-frequency from
	// component-base's cli.Run, which wraps its command; this one runs as a
	// subcommand instead, so it adds them itself.
	logs.AddFlags(cmd.PersistentFlags())
	// --infra points kubectl at the kubevirt profile's management side
	// (<data-dir>/infra-kubeconfig) instead of the tenant, unless
	// --kubeconfig says otherwise.
	var infra bool
	cmd.PersistentFlags().BoolVar(&infra, "infra", false, "use <data-dir>/infra-kubeconfig: the kubevirt profile's management cluster (VMIs, its CCM)")
	pre := cmd.PersistentPreRunE
	cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if infra && !c.Flags().Changed("kubeconfig") {
			path := filepath.Join(dataDir(), "infra-kubeconfig")
			configFlags.KubeConfig = &path
		}
		if pre != nil {
			return pre(c, args)
		}
		return nil
	}
	cmd.Use = "kubectl"
	cmd.Short = "Run kubectl against the lab (uses <data-dir>/kubeconfig)"
	// kubectl parses its own flags, including the ones that look like ours.
	cmd.DisableFlagParsing = false
	return cmd
}

// dataDir is CCMLAB_DATA_DIR, else .ccmlab.
func dataDir() string {
	if dir := os.Getenv("CCMLAB_DATA_DIR"); dir != "" {
		return dir
	}
	return ".ccmlab"
}
