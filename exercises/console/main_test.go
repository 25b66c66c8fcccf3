package console

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as a fake kubectl: the console runs its Binary
// as `<binary> kubectl <args>`, and the test binary is never started with
// "kubectl" as its first argument by go test.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "kubectl" {
		os.Exit(fakeKubectl(os.Stdout, os.Args[2:]))
	}
	os.Exit(m.Run())
}

// sandbox is what the fake kubectl reports about where it runs.
type sandbox struct {
	Cwd         string   `json:"cwd"`
	CwdEntries  []string `json:"cwdEntries"`
	Home        string   `json:"home"`
	HomeEntries []string `json:"homeEntries"`
	Env         []string `json:"env"`
	Args        []string `json:"args"`
}

const sandboxPrefix = "SANDBOX "

// fakeKubectl is a kubectl that does the worst with what it is given: it
// prints every file any argument (or any tail of one, as in -fPATH or
// --from-file=key=PATH) names, every file in a directory one names, and
// fetches every URL one holds. If the console ever lets a path or a
// server through to it, the canary's secrets show in its output or the
// canary server sees a request.
func fakeKubectl(w io.Writer, args []string) int {
	sb := sandbox{Home: os.Getenv("HOME"), Env: os.Environ(), Args: args}
	sb.Cwd, _ = os.Getwd()
	sb.CwdEntries = names(sb.Cwd)
	sb.HomeEntries = names(sb.Home)
	b, _ := json.Marshal(sb)
	fmt.Fprintf(w, "%s%s\n", sandboxPrefix, b)
	client := &http.Client{Timeout: 2 * time.Second}
	seen := map[string]bool{}
	for _, a := range args {
		for i := range len(a) {
			cand := a[i:]
			if seen[cand] {
				continue
			}
			seen[cand] = true
			if strings.HasPrefix(cand, "http://") || strings.HasPrefix(cand, "https://") {
				if resp, err := client.Get(cand); err == nil {
					body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
					resp.Body.Close()
					fmt.Fprintf(w, "URL %s:\n%s\n", cand, body)
				}
				continue
			}
			printPath(w, cand, true)
		}
	}
	return 0
}

func printPath(w io.Writer, p string, descend bool) {
	st, err := os.Stat(p)
	switch {
	case err != nil:
	case st.Mode().IsRegular():
		if b, err := os.ReadFile(p); err == nil {
			fmt.Fprintf(w, "FILE %s:\n%s\n", p, b)
		}
	case st.IsDir() && descend:
		for _, n := range names(p) {
			printPath(w, filepath.Join(p, n), false)
		}
	}
}

func names(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []string{"(" + err.Error() + ")"}
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

// reportedSandbox reads the fake kubectl's report from a console output.
func reportedSandbox(t *testing.T, out string) sandbox {
	t.Helper()
	for line := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(line, sandboxPrefix); ok {
			var sb sandbox
			if err := json.Unmarshal([]byte(rest), &sb); err != nil {
				t.Fatal(err)
			}
			return sb
		}
	}
	t.Fatalf("no sandbox report in %q", out)
	return sandbox{}
}
