package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/dataplane/outside"
	"github.com/ccmlab/ccmlab/lab/podruntime"
)

// `ccmlab curl` is curl in the student's shell, outside the lab's VPC:
// the lab's runtime curl (podruntime.Curl) over lab/dataplane/outside's
// network, which resolves the lab's load-balancer names as the public
// DNS does and connects only to loopback (the load balancers' listeners).
// The lab is found through <data-dir>/lab.json, which `ccmlab serve`
// writes once it is ready.

// labFileName is the file in the data dir that says where the running
// lab's page and API are, and its token (if any): the same secrecy as the
// kubeconfig beside it (0600, cluster-admin), which already gives whoever
// reads the directory the whole lab.
const labFileName = "lab.json"

type labFile struct {
	URL   string `json:"url"`
	Token string `json:"token,omitempty"`
}

// writeLabFile records where the lab in dataDir answers (addr: the
// host:port a student types, studentAddr).
func writeLabFile(dataDir, addr, token string) error {
	b, _ := json.Marshal(labFile{URL: "http://" + addr, Token: token})
	return os.WriteFile(filepath.Join(dataDir, labFileName), b, 0o600)
}

// removeLabFile: the lab in dataDir stopped.
func removeLabFile(dataDir string) { _ = os.Remove(filepath.Join(dataDir, labFileName)) }

// labDataDir is the data dir a client subcommand uses: --data-dir, else
// CCMLAB_DATA_DIR (as `ccmlab kubectl`), else .ccmlab.
func labDataDir(flag string) string {
	return cmp.Or(flag, os.Getenv("CCMLAB_DATA_DIR"), ".ccmlab")
}

// readLabFile finds the running lab in dataDir.
func readLabFile(dataDir string) (labFile, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, labFileName))
	if errors.Is(err, os.ErrNotExist) {
		return labFile{}, fmt.Errorf("no running lab in %s (start one with: ccmlab serve --data-dir %s)", dataDir, dataDir)
	}
	if err != nil {
		return labFile{}, err
	}
	var lf labFile
	if err := json.Unmarshal(b, &lf); err != nil {
		return labFile{}, fmt.Errorf("%s: %w", filepath.Join(dataDir, labFileName), err)
	}
	u, err := url.Parse(lf.URL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return labFile{}, fmt.Errorf("%s: bad url %q", filepath.Join(dataDir, labFileName), lf.URL)
	}
	return lf, nil
}

// labView reads the lab's load balancers and their listeners from its
// /api/state.
func labView(ctx context.Context, lf labFile) (outside.View, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(lf.URL, "/")+"/api/state", nil)
	if err != nil {
		return outside.View{}, err
	}
	if lf.Token != "" {
		req.Header.Set("Authorization", "Bearer "+lf.Token)
	}
	// The lab's own address, never a proxy's.
	cl := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := cl.Do(req)
	if err != nil {
		return outside.View{}, fmt.Errorf("the lab at %s does not answer (is it running?): %w", lf.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return outside.View{}, fmt.Errorf("the lab at %s answered %d: %s", lf.URL, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var st struct {
		Cloud struct {
			LoadBalancers []cloud.LoadBalancer     `json:"loadBalancers"`
			Listeners     []dataplane.ListenerInfo `json:"listeners"`
		} `json:"cloud"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&st); err != nil {
		return outside.View{}, fmt.Errorf("the lab's state: %w", err)
	}
	return outside.NewView(st.Cloud.LoadBalancers, st.Cloud.Listeners), nil
}

// exitError carries a command's own exit code (curl's) to main.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// splitCurlArgs takes ccmlab's own flags out of a curl command line:
// --data-dir (curl has no such option) and the console's hidden
// --from-console.
func splitCurlArgs(args []string) (dataDir string, console bool, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--data-dir":
			if i+1 >= len(args) {
				return "", false, nil, errors.New("--data-dir needs a directory")
			}
			dataDir = args[i+1]
			i++
		case strings.HasPrefix(a, "--data-dir="):
			dataDir = strings.TrimPrefix(a, "--data-dir=")
		case a == "--from-console":
			console = true
		default:
			rest = append(rest, a)
		}
	}
	return dataDir, console, rest, nil
}

func newCurlCommand(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "curl [--data-dir DIR] [curl options] URL",
		Short: "curl from outside the lab's VPC: the lab's load-balancer names resolve, internet-facing ones answer",
		Long: `ccmlab curl is curl as your own shell would run it against the lab's cloud, from
outside its VPC: an internet-facing load balancer's DNS name resolves and its
listeners answer; an internal one's name resolves to private addresses, which
time out from outside, as on AWS; ClusterIPs, Pod and node addresses time out;
names that are not the lab's do not resolve, and addresses outside the lab are
refused (the lab never sends a packet off loopback). Options: -s -S -v -I -i -f
-o -w -H -X -d -m -A --resolve --connect-timeout.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, console, rest, err := splitCurlArgs(args)
			if err != nil {
				return err
			}
			if len(rest) == 1 && (rest[0] == "--help" || rest[0] == "-h") {
				return cmd.Help()
			}
			lf, err := readLabFile(labDataDir(dir))
			if err != nil {
				return err
			}
			view, err := labView(cmd.Context(), lf)
			if err != nil {
				return err
			}
			var files []*os.File
			defer func() {
				for _, f := range files {
					_ = f.Close()
				}
			}()
			cfg := podruntime.CurlConfig{
				Network: &outside.Client{View: view, LoopbackAny: !console},
				Stdout:  stdout, Stderr: stderr, TTY: isTerminal(stdout),
			}
			if !console {
				cfg.Create = func(name string) (io.Writer, error) {
					f, err := os.Create(name)
					if err != nil {
						return nil, err
					}
					files = append(files, f)
					return f, nil
				}
			}
			if code := podruntime.Curl(cmd.Context(), cfg, rest); code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
}

// isTerminal: w is a character device (curl shows no progress meter to
// a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
