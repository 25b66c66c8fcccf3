package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkPodCommands times what a student types against a served lab
// (issue 38's budgets): `kubectl exec deploy/web -- curl -s http://web`
// and `kubectl run --rm -i ... -- curl`, each from the command's start to
// its output, through the kubectl on the PATH (the student's; the
// embedded one when there is none). The baseline, measured in the same
// run with the same kubectl, is `kubectl get --raw /readyz`: a process
// start and one request, which every command pays before the runtime
// does anything.
func BenchmarkPodCommands(b *testing.B) {
	needBinary(b)
	dataDir := b.TempDir()
	startProcess(b, dataDir, "--nodes", "2")
	kubectl := func(args ...string) (string, time.Duration, error) {
		var cmd *exec.Cmd
		if path, err := exec.LookPath("kubectl"); err == nil {
			cmd = exec.Command(path, args...)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dataDir, "kubeconfig"))
		} else {
			cmd = exec.Command(binary, append([]string{"kubectl"}, args...)...)
			cmd.Env = append(os.Environ(), "CCMLAB_DATA_DIR="+dataDir, "KUBECONFIG=")
		}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if err != nil {
			return out.String(), d, fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, &errOut)
		}
		return out.String(), d, nil
	}
	must := func(args ...string) string {
		out, _, err := kubectl(args...)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	must("create", "deployment", "web", "--image=nginx:1.29", "--port=80")
	must("expose", "deployment", "web", "--port=80")
	must("rollout", "status", "deploy/web", "--timeout=120s")

	const execs, runs = 20, 5
	var base, execT, runT []time.Duration
	b.ResetTimer()
	for range b.N {
		for range execs {
			_, d, err := kubectl("get", "--raw", "/readyz")
			if err != nil {
				b.Fatal(err)
			}
			base = append(base, d)
			out, d, err := kubectl("exec", "deploy/web", "--", "curl", "-s", "http://web")
			if err != nil || !strings.Contains(out, "Welcome to nginx!") {
				b.Fatalf("exec curl: %q, %v", out, err)
			}
			execT = append(execT, d)
		}
		for i := range runs {
			name := fmt.Sprintf("t%d-%d", len(runT), i)
			out, d, err := kubectl("run", name, "--image=curlimages/curl:8.15.0", "--restart=Never", "--rm", "-i", "--quiet", "--", "curl", "-s", "http://web")
			if err != nil || !strings.Contains(out, "Welcome to nginx!") {
				b.Fatalf("run curl: %q, %v", out, err)
			}
			runT = append(runT, d)
		}
	}
	b.StopTimer()
	p50 := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	b.ReportMetric(p50(base), "kubectl-baseline-p50-ms")
	b.ReportMetric(p50(execT), "exec-curl-p50-ms")
	b.ReportMetric(p50(runT)/1000, "run-curl-p50-s")
	b.ReportMetric(p50(execT)/p50(base), "exec/baseline")
	b.ReportMetric(0, "ns/op")
}
