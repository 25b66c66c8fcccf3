//go:build !unit

package podstest

import (
	"bufio"
	"context"
	"net/http"
	"net/netip"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/app/apptest"
	"github.com/ccmlab/ccmlab/app/sim"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/controlplane/cptest"
)

func kubectl(t *testing.T, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	return testutil.Kubectl(t, env.CP.KubeconfigPath(), timeout, args...)
}

func must(t *testing.T, args ...string) string {
	t.Helper()
	return testutil.MustKubectl(t, env.CP.KubeconfigPath(), args...)
}

// TestPodsRun is the check on the lab ccmlab serve builds: a
// Deployment of nginx behind a Service, reached from other Pods with
// curl through the data plane, exec, port-forward, an unknown command,
// a crash loop and a Job-like Pod.
func TestPodsRun(t *testing.T) {
	cptest.Need(t)
	if _, err := apptest.Serve(env, sim.DefaultLab()); err != nil {
		t.Fatal(err)
	}
	// The check, typed as there.
	must(t, "create", "deployment", "web", "--image=nginx:1.29", "--port=80")
	must(t, "expose", "deployment", "web", "--type=LoadBalancer", "--port=80")
	must(t, "rollout", "status", "deploy/web", "--timeout=90s")
	ip := strings.TrimSpace(must(t, "get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}"))
	cidr := netip.MustParsePrefix(env.CP.ClusterCIDR())

	t.Run("run curl to the Service by name", func(t *testing.T) {
		out := must(t, "run", "t", "--image=curlimages/curl", "--restart=Never", "--rm", "-i", "--", "curl", "-s", "http://web")
		if !strings.Contains(out, "<title>Welcome to nginx!</title>") {
			t.Fatalf("no nginx page:\n%s", out)
		}
		// The container waits for kubectl's attach (kubelet awaitAttach),
		// so the output comes through it, not the logs fallback.
		if strings.Contains(out, "couldn't attach") {
			t.Errorf("kubectl fell back to the logs:\n%s", out)
		}
		webIP := strings.TrimSpace(must(t, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].status.podIP}"))
		logs := must(t, "logs", "deploy/web")
		found := false
		for _, l := range strings.Split(logs, "\n") {
			if !strings.Contains(l, `"GET / HTTP/1.1" 200`) {
				continue
			}
			src, err := netip.ParseAddr(strings.Fields(l)[0])
			if err == nil && cidr.Contains(src) && src.String() != webIP {
				found = true
			}
		}
		if !found {
			t.Errorf("nginx's access log has no request from another Pod's IP in %s:\n%s", cidr, logs)
		}
	})
	t.Run("exec curl by the Service's name", func(t *testing.T) {
		out := must(t, "exec", "deploy/web", "--", "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://web.default.svc.cluster.local")
		if strings.TrimSpace(out) != "200" {
			t.Errorf("got %q, want 200", out)
		}
	})
	t.Run("nslookup shows the ClusterIP", func(t *testing.T) {
		out := must(t, "run", "n", "--image=busybox:1.36", "--restart=Never", "--rm", "-i", "--", "nslookup", "web")
		if !regexp.MustCompile(`(?m)^Address: ` + regexp.QuoteMeta(ip) + `$`).MatchString(out) {
			t.Errorf("no address %s in:\n%s", ip, out)
		}
	})
	t.Run("kube-system's coredns and kube-proxy are ready", func(t *testing.T) {
		testutil.Eventually(t, time.Minute, "coredns and kube-proxy ready", func() (bool, string) {
			d, err := env.Client.AppsV1().Deployments("kube-system").Get(context.Background(), "coredns", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			ds, err := env.Client.AppsV1().DaemonSets("kube-system").Get(context.Background(), "kube-proxy", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			ok := d.Status.ReadyReplicas == *d.Spec.Replicas && ds.Status.DesiredNumberScheduled > 0 && ds.Status.NumberReady == ds.Status.DesiredNumberScheduled
			return ok, d.Status.String() + " " + ds.Status.String()
		})
	})
	t.Run("port-forward", func(t *testing.T) {
		bin, _ := exec.LookPath("kubectl")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "--kubeconfig", env.CP.KubeconfigPath(), "port-forward", "svc/web", ":80")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("port-forward printed nothing: %v", err)
		}
		m := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> 80`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unexpected port-forward output %q", line)
		}
		resp, err := http.Get("http://" + m[1] + "/")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Server") != "nginx/1.29" {
			t.Errorf("got %d %q, want 200 from nginx/1.29", resp.StatusCode, resp.Header.Get("Server"))
		}
	})
	t.Run("pods and services proxy", testPodsProxy) // proxy_test.go
	t.Run("unknown command", func(t *testing.T) {
		out, code := kubectl(t, time.Minute, "exec", "deploy/web", "--", "foo")
		if code != 126 || !strings.Contains(out, `exec: "foo": executable file not found in $PATH`) {
			t.Errorf("exec foo: exit %d %q", code, out)
		}
		out, code = kubectl(t, time.Minute, "exec", "deploy/web", "--", "sh", "-c", "foo")
		if code != 127 || !strings.Contains(out, "sh: 1: foo: not found") {
			t.Errorf("sh -c foo: exit %d %q", code, out)
		}
	})
	t.Run("crash loop", func(t *testing.T) {
		must(t, "run", "crash", "--image=busybox:1.36", "--", "sh", "-c", "echo boom; exit 1")
		testutil.Eventually(t, 2*time.Minute, "crash restarted and in CrashLoopBackOff", func() (bool, string) {
			pod, err := env.Client.CoreV1().Pods("default").Get(context.Background(), "crash", metav1.GetOptions{})
			if err != nil || len(pod.Status.ContainerStatuses) == 0 {
				return false, "no status"
			}
			cs := pod.Status.ContainerStatuses[0]
			ok := cs.RestartCount >= 1 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" &&
				cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode == 1
			return ok, cs.String()
		})
		if out := must(t, "logs", "crash", "--previous"); strings.TrimSpace(out) != "boom" {
			t.Errorf("logs --previous = %q", out)
		}
	})
	t.Run("job-like Pod", func(t *testing.T) {
		must(t, "run", "job", "--image=busybox:1.36", "--restart=Never", "--", "sh", "-c", "echo hi; exit 3")
		testutil.Eventually(t, time.Minute, "job Failed with exit code 3", func() (bool, string) {
			pod, err := env.Client.CoreV1().Pods("default").Get(context.Background(), "job", metav1.GetOptions{})
			if err != nil || len(pod.Status.ContainerStatuses) == 0 {
				return false, "no status"
			}
			term := pod.Status.ContainerStatuses[0].State.Terminated
			return pod.Status.Phase == v1.PodFailed && term != nil && term.ExitCode == 3 && term.Reason == "Error", pod.Status.String()
		})
		if out := must(t, "logs", "job"); strings.TrimSpace(out) != "hi" {
			t.Errorf("logs = %q", out)
		}
	})
}
