//go:build !unit

package botocoretest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/lab/awsapi"
	"github.com/ccmlab/ccmlab/lab/cloud"
)

// jcase is one call the judge makes: botocore's operation name and
// parameters, and what the lab must answer.
type jcase struct {
	Name    string           `json:"name"`
	Service string           `json:"service"`
	Op      string           `json:"op"`
	Params  map[string]any   `json:"params,omitempty"`
	Expect  string           `json:"expect,omitempty"` // "ok" (default) or an error code
	Status  int              `json:"status,omitempty"`
	Message []string         `json:"message,omitempty"` // substrings of the error's message
	Save    map[string][]any `json:"save,omitempty"`    // var -> path in the answer
}

type jresult struct {
	Botocore string `json:"botocore"`
	Cases    []struct {
		Name     string   `json:"name"`
		Problems []string `json:"problems"`
	} `json:"cases"`
}

// python finds the Python whose botocore is newest: the judge holds the
// lab to the newest service models on the machine (the image's pip
// botocore 1.43 before Debian's python3-botocore 1.29). Under CI a
// missing botocore fails the test.
func python(t *testing.T) string {
	t.Helper()
	best, bestV := "", ""
	cands := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append([]string{p}, cands...)
	}
	for _, p := range cands {
		out, err := exec.Command(p, "-c", "import botocore; print(botocore.__version__)").Output()
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(out))
		if best == "" || versionLess(bestV, v) {
			best, bestV = p, v
		}
	}
	if best == "" {
		msg := "python3 with botocore is not installed (pip install awscli, or apt-get install python3-botocore)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return best
}

func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		var x, y int
		_, _ = fmt.Sscan(pa[i], &x)
		_, _ = fmt.Sscan(pb[i], &y)
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

// lab is a cloud with two instances behind the AWS API on loopback.
type lab struct {
	cloud *cloud.Cloud
	srv   *awsapi.Server
	net   cloud.AWSNetwork
	inst  []cloud.Instance
}

func newLab(t *testing.T) *lab {
	t.Helper()
	c, err := cloud.New(cloud.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	l := &lab{cloud: c, net: c.AWSNetworkInfo()}
	for range 3 { // the third one the judge terminates
		in, err := c.RunInstance(cloud.WithCaller(context.Background(), "user"), cloud.RunInstanceInput{})
		if err != nil {
			t.Fatal(err)
		}
		l.inst = append(l.inst, in)
	}
	dir := t.TempDir()
	srv, err := awsapi.Listen(awsapi.ServerConfig{Handler: awsapi.Config{Cloud: c}, EnvPath: filepath.Join(dir, "aws.env")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	l.srv = srv
	return l
}

// judge runs judge.py over cases and returns its findings. Nothing it
// does can reach AWS: the endpoint is the lab's, instance metadata is
// off, no config or credentials file is read, and any other HTTP(S)
// request goes to a proxy on a closed loopback port.
func (l *lab) judge(t *testing.T, py string, cases []jcase) jresult {
	t.Helper()
	key := l.srv.StudentKey()
	in, err := json.Marshal(map[string]any{"endpoint": l.srv.URL(), "region": l.cloud.Config().Region,
		"access_key": key.AccessKeyID, "secret_key": key.SecretAccessKey, "cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "judge.py")
	cmd.Stdin = bytes.NewReader(in)
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("judge.py: %v\n%s", err, stderr.String())
	}
	var res jresult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("judge.py answered %q: %v", out, err)
	}
	if len(res.Cases) != len(cases) {
		t.Fatalf("judge.py judged %d cases of %d", len(res.Cases), len(cases))
	}
	return res
}

func report(t *testing.T, res jresult) {
	t.Helper()
	for _, c := range res.Cases {
		t.Run(c.Name, func(t *testing.T) {
			for _, p := range c.Problems {
				t.Error(p)
			}
		})
	}
}

// TestBotocoreJudge: every action the lab implements, called with
// botocore and judged by its service model, then the same for the
// denials of the lab's IAM fault.
func TestBotocoreJudge(t *testing.T) {
	py := python(t)
	l := newLab(t)
	cases := judgeCases(l)
	res := l.judge(t, py, cases)
	t.Logf("botocore %s: %d cases", res.Botocore, len(cases))
	report(t, res)

	actions := map[string]bool{}
	for _, c := range cases {
		actions[c.Service+":"+c.Op] = true
	}
	for _, svc := range awsapi.ServiceActions() {
		for _, a := range svc.Actions {
			if !actions[svc.ID+":"+a] {
				t.Errorf("the judge never calls %s %s", svc.ID, a)
			}
		}
	}
	t.Logf("%d actions", len(actions))

	t.Run("denied", func(t *testing.T) {
		if err := l.cloud.SetFaults(cloud.Faults{Deny: []string{cloud.ActionCreateTags, cloud.ActionCreateLoadBalancer}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.cloud.SetFaults(cloud.Faults{}) })
		denied := deniedCases(l)
		report(t, l.judge(t, py, denied))
		t.Logf("%d denial cases", len(denied))
	})
}
