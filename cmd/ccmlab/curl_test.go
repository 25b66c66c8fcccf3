//go:build !unit

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/internal/testutil"
)

// curlIn runs `ccmlab curl` against the lab in dataDir and returns its
// stdout, stderr and exit code.
func curlIn(t *testing.T, dataDir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"curl", "--data-dir", dataDir}, args...)...)
	cmd.Env = append(os.Environ(), "CCMLAB_DATA_DIR=", "HTTP_PROXY=http://192.0.2.1:3128", "http_proxy=http://192.0.2.1:3128")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// TestCurlFromOutside: on the served world, ccmlab curl reaches an
// internet-facing load balancer by its DNS name as curl would from the
// internet; an internal one's name resolves but times out, as do a
// ClusterIP and a Pod IP; a name that is not the lab's does not resolve
// and an address outside the lab is refused. ccmlab lbs prints the
// host's own curl command line, which the host's curl runs; the page's
// console runs curl with the same rules, and no loopback port but the
// listeners'.
func TestCurlFromOutside(t *testing.T) {
	needBinary(t)
	dataDir := t.TempDir()
	l := startProcess(t, dataDir, "--nodes", "1")
	if _, err := os.Stat(filepath.Join(dataDir, labFileName)); err != nil {
		t.Fatalf("the ready lab wrote no %s: %v", labFileName, err)
	}
	mustKubectl(t, dataDir, "create", "deployment", "web", "--image=nginx:1.29", "--port=80")
	mustKubectl(t, dataDir, "expose", "deployment", "web", "--type=LoadBalancer", "--port=80")
	// An internal ELB (cloud-provider-aws: the annotation set, to any
	// value but "false"), from its creation.
	mustKubectl(t, dataDir, "expose", "deployment", "web", "--name=inner", "--type=LoadBalancer", "--port=80",
		`--overrides={"metadata":{"annotations":{"service.beta.kubernetes.io/aws-load-balancer-internal":"true"}}}`)
	hostOf := func(svc string) func() (bool, string) {
		return func() (bool, string) {
			out, _ := kubectlIn(t, dataDir, "get", "svc", svc, "-o", "jsonpath={.status.loadBalancer.ingress[0].hostname}")
			return strings.Contains(out, ".elb.amazonaws.com"), out
		}
	}
	testutil.Eventually(t, 90*time.Second, "web's EXTERNAL-IP", hostOf("web"))
	testutil.Eventually(t, 90*time.Second, "inner's EXTERNAL-IP", hostOf("inner"))
	web := strings.TrimSpace(mustKubectl(t, dataDir, "get", "svc", "web", "-o", "jsonpath={.status.loadBalancer.ingress[0].hostname}"))
	inner := strings.TrimSpace(mustKubectl(t, dataDir, "get", "svc", "inner", "-o", "jsonpath={.status.loadBalancer.ingress[0].hostname}"))
	clusterIP := strings.TrimSpace(mustKubectl(t, dataDir, "get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}"))
	if !strings.HasPrefix(inner, "internal-") {
		t.Fatalf("inner's name %q is not an internal ELB's", inner)
	}
	// The nginx page once a target is healthy.
	testutil.Eventually(t, 120*time.Second, "ccmlab curl answers with nginx's page", func() (bool, string) {
		out, errOut, code := curlIn(t, dataDir, "-s", "http://"+web+"/")
		return code == 0 && strings.Contains(out, "Welcome to nginx!"), out + errOut
	})

	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string // a regexp
		stderr string // a regexp
	}{
		{name: "status and remote ip", args: []string{"-s", "-o", "/dev/null", "-w", "%{http_code} %{remote_ip}", "http://" + web + "/"}, stdout: `^200 127\.0\.0\.1$`},
		{name: "verbose", args: []string{"-sv", "-o", "/dev/null", "http://" + web + "/"}, stderr: `(?s)\* +Trying 127\.0\.0\.1:80\.\.\..*> GET / HTTP/1\.1\n> Host: ` + regexp.QuoteMeta(web) + `.*< HTTP/1\.1 200 OK`},
		{name: "head", args: []string{"-sI", "http://" + web + "/"}, stdout: `^HTTP/1\.1 200 OK\r\n`},
		{name: "internal name times out", args: []string{"-sS", "-m", "1", "http://" + inner + "/"}, code: 28, stderr: `curl: \(28\) `},
		{name: "ClusterIP times out", args: []string{"-sS", "--connect-timeout", "1", "http://" + clusterIP + "/"}, code: 28, stderr: `curl: \(28\) Failed to connect to ` + regexp.QuoteMeta(clusterIP) + ` port 80`},
		{name: "no listener on 8080", args: []string{"-sS", "-m", "1", "http://" + web + ":8080/"}, code: 28, stderr: `curl: \(28\)`},
		{name: "other names do not resolve", args: []string{"-sS", "http://example.com/"}, code: 6, stderr: `curl: \(6\) Could not resolve host: example\.com`},
		{name: "other addresses are refused", args: []string{"-sS", "http://192.0.2.7/"}, code: 7, stderr: `curl: \(7\) Failed to connect to 192\.0\.2\.7 port 80 .*refused by ccmlab`},
		{name: "--resolve to a closed loopback port", args: []string{"-sS", "-o", "/dev/null", "--resolve", "x.example:80:127.0.0.1", "http://x.example/"}, code: 7, stderr: `curl: \(7\) Failed to connect to x\.example port 80`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := curlIn(t, dataDir, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			if tc.stdout != "" && !regexp.MustCompile(tc.stdout).MatchString(out) {
				t.Errorf("stdout %q does not match %s", out, tc.stdout)
			}
			if tc.stderr != "" && !regexp.MustCompile(tc.stderr).MatchString(errOut) {
				t.Errorf("stderr %q does not match %s", errOut, tc.stderr)
			}
		})
	}

	t.Run("ccmlab lbs gives the host's curl its line", func(t *testing.T) {
		out, err := exec.Command(binary, "lbs", "--data-dir", dataDir).Output()
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`curl --connect-to (\S+) (http://\S+)`).FindStringSubmatch(string(out))
		if m == nil || !strings.Contains(m[2], web) {
			t.Fatalf("no --connect-to line for %s in:\n%s", web, out)
		}
		if !strings.Contains(string(out), inner) && !strings.Contains(string(out), "internal") {
			t.Errorf("the internal load balancer is not listed:\n%s", out)
		}
		curl, err := exec.LookPath("curl")
		if err != nil {
			t.Skip("no curl on this host")
		}
		got, err := exec.Command(curl, "-s", "--noproxy", "*", "--connect-to", m[1], m[2]).Output()
		if err != nil || !strings.Contains(string(got), "Welcome to nginx!") {
			t.Fatalf("the host's curl --connect-to %s %s: %v\n%s", m[1], m[2], err, got)
		}
	})

	t.Run("console", func(t *testing.T) {
		run := func(line string) (int, map[string]any) {
			b, _ := json.Marshal(map[string]string{"command": line})
			resp, err := http.Post("http://"+l.addr+"/api/console", "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&m)
			return resp.StatusCode, m
		}
		_, lbsOut, _ := strings.Cut(mustLBs(t, dataDir), web)
		listener := regexp.MustCompile(`127\.0\.0\.1:\d+`).FindString(lbsOut)
		for _, tc := range []struct {
			line   string
			status int
			exit   float64
			output string
		}{
			{"curl -s -o /dev/null -w %{http_code} http://" + web + "/", 200, 0, "200"},
			{"curl -s http://" + web + "/", 200, 0, "Welcome to nginx!"},
			{"curl -sS -m 1 http://" + inner + "/", 200, 28, "curl: (28)"},
			{"curl -sS http://" + listener + "/", 200, 0, "Welcome to nginx!"},
			{"curl -sS http://" + l.addr + "/api/state", 200, 7, "refused by ccmlab"},
			{"curl -sS http://localhost:" + strings.Split(l.addr, ":")[1] + "/healthz", 200, 7, "refused by ccmlab"},
			{"curl -o /tmp/x http://" + web + "/", 400, 0, ""},
			{"curl -K /etc/passwd http://" + web + "/", 400, 0, ""},
			{"curl --data-dir / http://" + web + "/", 400, 0, ""},
		} {
			t.Run(tc.line, func(t *testing.T) {
				status, m := run(tc.line)
				if status != tc.status {
					t.Fatalf("status %d, want %d: %v", status, tc.status, m)
				}
				if status != 200 {
					return
				}
				if m["exitCode"] != tc.exit || !strings.Contains(m["output"].(string), tc.output) {
					t.Errorf("exit %v output %q, want exit %v with %q", m["exitCode"], m["output"], tc.exit, tc.output)
				}
			})
		}
	})
}

func mustLBs(t *testing.T, dataDir string) string {
	t.Helper()
	out, err := exec.Command(binary, "lbs", "--data-dir", dataDir).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
