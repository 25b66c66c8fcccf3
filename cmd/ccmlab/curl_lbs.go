package main

import (
	"fmt"
	"io"
	"net"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ccmlab/ccmlab/lab/dataplane/outside"
)

// connectToLine is the one-line form for the host's own curl: the
// load balancer's name in the URL and the Host header, the connection to
// its listener's real loopback address (curl's --connect-to
// HOST1:PORT1:HOST2:PORT2). Empty when the load balancer has no name or
// no listener on port.
func connectToLine(lb outside.LB, port int32) string {
	addr, ok := lb.Listeners[port]
	if !ok || lb.DNSName == "" {
		return ""
	}
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	url := "http://" + lb.DNSName + "/"
	if port != 80 {
		url = fmt.Sprintf("http://%s:%d/", lb.DNSName, port)
	}
	return fmt.Sprintf("curl --connect-to %s:%d:%s:%s %s", lb.DNSName, port, host, p, url)
}

// newLBsCommand lists the lab's load balancers with the command that
// reaches each listener from the student's shell.
func newLBsCommand(stdout io.Writer) *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "lbs",
		Short: "List the lab's load balancers and the curl command line that reaches each listener",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lf, err := readLabFile(labDataDir(dataDir))
			if err != nil {
				return err
			}
			view, err := labView(cmd.Context(), lf)
			if err != nil {
				return err
			}
			printLBs(stdout, view)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "the lab's data dir (default $CCMLAB_DATA_DIR, else .ccmlab)")
	return cmd
}

func printLBs(w io.Writer, view outside.View) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCHEME\tPORT\tFROM YOUR SHELL")
	for _, lb := range view.LBs {
		scheme := "internet-facing"
		if lb.Internal {
			scheme = "internal"
		}
		ports := make([]int32, 0, len(lb.Listeners))
		for p := range lb.Listeners {
			ports = append(ports, p)
		}
		slices.Sort(ports)
		if len(ports) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t(no listener open yet)\n", lb.Name, scheme)
		}
		for _, p := range ports {
			how := ""
			switch {
			case lb.Internal:
				how = "(internal: only from inside the VPC, e.g. kubectl exec ... -- curl)"
			case lb.DNSName != "":
				how = connectToLine(lb, p) + "   # or: ccmlab curl http://" + lb.DNSName + portSuffix(p) + "/"
			default:
				how = "ccmlab curl http://" + lb.IP + portSuffix(p) + "/   # or: curl " + lb.Listeners[p]
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", lb.Name, scheme, p, how)
		}
	}
	_ = tw.Flush()
}

func portSuffix(p int32) string {
	if p == 80 {
		return ""
	}
	return fmt.Sprintf(":%d", p)
}
