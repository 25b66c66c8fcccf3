package podruntime

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/kubelet"
)

// fakeNet is a cluster with one Service, web (10.96.0.20:80), whose
// answer is "hello", and nothing else.
type fakeNet struct{ reqs []dataplane.PodRequest }

func (f *fakeNet) FromPod(_ context.Context, r dataplane.PodRequest) (dataplane.PodResponse, error) {
	f.reqs = append(f.reqs, r)
	switch r.IP + ":" + itoa(int(r.Port)) {
	case "10.96.0.20:80":
		return dataplane.PodResponse{Status: 200, Header: http.Header{"Server": {"nginx/1.29.0"}}, Body: []byte("hello\n")}, nil
	case "10.96.0.30:80":
		return dataplane.PodResponse{}, &dataplane.ConnError{Refused: false}
	}
	return dataplane.PodResponse{}, &dataplane.ConnError{Refused: true}
}

func (f *fakeNet) Lookup(_ *v1.Pod, name string, _ uint16) (dataplane.DNSAnswer, error) {
	if name == "web.default.svc.cluster.local" {
		return dataplane.DNSAnswer{Name: name, Addrs: []string{"10.96.0.20"}}, nil
	}
	return dataplane.DNSAnswer{Name: name, NXDomain: true}, nil
}

func (f *fakeNet) ServicesFor(string) []*v1.Service {
	return []*v1.Service{{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       v1.ServiceSpec{ClusterIP: "10.96.0.20", Ports: []v1.ServicePort{{Port: 80, Protocol: v1.ProtocolTCP}}},
	}}
}

func (f *fakeNet) DNSServer() string { return "10.96.0.10" }

func (f *fakeNet) DefaultAnswer(dataplane.ServeRequest) dataplane.ServeResult {
	return dataplane.ServeResult{Status: 200, Body: []byte("echo")}
}

func testPod(image string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{NodeName: "node-a", Containers: []v1.Container{{Name: "c", Image: image}}},
		Status:     v1.PodStatus{PodIP: "10.244.1.5", HostIP: "10.0.1.10"},
	}
}

func newTestRuntime(t *testing.T, l Limits) (*Runtime, *fakeNet) {
	t.Helper()
	n := &fakeNet{}
	rt, err := New(Config{Network: n, Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	return rt, n
}

// exec runs cmd in a container of image and returns its output and code.
func exec(t *testing.T, rt *Runtime, image string, cmd ...string) (string, string, int32) {
	t.Helper()
	pod := testPod(image)
	var out, errw strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	exit := rt.Exec(ctx, pod, &pod.Spec.Containers[0], cmd, kubelet.Stdio{Stdout: &out, Stderr: &errw})
	return out.String(), errw.String(), exit.Code
}

func TestShell(t *testing.T) {
	rt, _ := newTestRuntime(t, Limits{})
	for _, tc := range []struct {
		name, script, out string
		code              int32
		errSub            string
	}{
		{"exit code", "echo hi; exit 3", "hi\n", 3, ""},
		{"and or", "false && echo no || echo yes", "yes\n", 0, ""},
		{"pipe", "echo abc | cat", "abc\n", 0, ""},
		{"pipe grep", "printf 'a\\nb\\nc\\n' | grep b", "b\n", 0, ""},
		{"quoting", `echo "a  b" 'c $X'`, "a  b c $X\n", 0, ""},
		{"variables", "X=1; echo $X ${Y:-d} ${#X}", "1 d 1\n", 0, ""},
		{"for", "for i in 1 2; do echo $i; done", "1\n2\n", 0, ""},
		{"if", "if [ 1 -eq 1 ]; then echo t; else echo f; fi", "t\n", 0, ""},
		{"while break", "n=0; while true; do n=$((n+1)); [ $n -ge 3 ] && break; done; echo $n", "3\n", 0, ""},
		{"command substitution", "x=$(echo hi); echo \"<$x>\"", "<hi>\n", 0, ""},
		{"write and read tmp", "echo saved > /tmp/f; cat /tmp/f", "saved\n", 0, ""},
		{"hostname", "cat /etc/hostname; hostname; echo $HOSTNAME", "t\nt\nt\n", 0, ""},
		{"service env", "echo $WEB_SERVICE_HOST:$WEB_SERVICE_PORT $WEB_PORT", "10.96.0.20:80 tcp://10.96.0.20:80\n", 0, ""},
		{"unknown command", "foo", "", 127, "sh: foo: not found"},
		{"no host files", "cat /etc/passwd", "", 1, "No such file or directory"},
		{"read-only", "echo x > /etc/hosts", "", 1, "Read-only file system"},
		{"functions refused", "f() { f; }; f", "", 2, "functions are not supported"},
		{"background refused", "sleep 1 &", "", 2, "background jobs"},
		{"subshell exit", "(exit 4); echo $?", "4\n", 0, ""},
		{"case", "case web in w*) echo match;; *) echo no;; esac", "match\n", 0, ""},
		{"set -e", "set -e; false; echo unreachable", "", 1, ""},
		{"negation", "! false && echo ok", "ok\n", 0, ""},
		{"stderr redirect", "cat /nope 2>/dev/null; echo $?", "1\n", 0, ""},
		{"resolv.conf", "cat /etc/resolv.conf", "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := exec(t, rt, "busybox:1.36", "sh", "-c", tc.script)
			if out != tc.out || code != tc.code || !strings.Contains(errOut, tc.errSub) {
				t.Errorf("sh -c %q = %q, %d (stderr %q); want %q, %d (stderr with %q)", tc.script, out, code, errOut, tc.out, tc.code, tc.errSub)
			}
		})
	}
}

func TestShellStaysOffTheHost(t *testing.T) {
	rt, _ := newTestRuntime(t, Limits{})
	dir := t.TempDir()
	host := filepath.Join(dir, "f")
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{
		"echo x > " + host,
		"echo x > /tmp/sh-interp-1234; cat " + filepath.Join(dir, "secret"),
		"cat < " + filepath.Join(dir, "secret"),
		". " + filepath.Join(dir, "secret"),
		"cd " + dir + " && ls",
		"cat <(echo hi)",
		"exec /bin/ls /",
	} {
		out, errOut, _ := exec(t, rt, "busybox", "sh", "-c", script)
		if strings.Contains(out+errOut, "s3cret") {
			t.Errorf("%q read a host file: %q", script, out+errOut)
		}
	}
	if _, err := os.Stat(host); err == nil {
		t.Errorf("a host file was written")
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), "sh-interp-1234")); err == nil {
		t.Errorf("a host temp file was written")
	}
}

func TestShellBounds(t *testing.T) {
	rt, _ := newTestRuntime(t, Limits{StepsPerSecond: 1000})
	t.Run("doubling a variable runs out of memory", func(t *testing.T) {
		_, errOut, code := exec(t, rt, "busybox", "sh", "-c", "x=1; while true; do x=$x$x; done")
		if code != 137 || !strings.Contains(errOut, "out of memory") {
			t.Errorf("got %d %q, want 137 and out of memory", code, errOut)
		}
	})
	t.Run("a busy loop is throttled and stops with its context", func(t *testing.T) {
		pod := testPod("busybox")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		counter := &countWriter{}
		exit := rt.Exec(ctx, pod, &pod.Spec.Containers[0], []string{"sh", "-c", "while true; do echo x; done"}, kubelet.Stdio{Stdout: counter})
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("the loop ran %s after its context ended", took)
		}
		if exit.Code != 143 {
			t.Errorf("exit %d, want 143", exit.Code)
		}
		// 1,000 steps a second, two steps (echo and the loop test) per
		// line: well under 1,000 lines in 0.3 s.
		if counter.n > 1000 {
			t.Errorf("%d lines in 0.3 s: not throttled", counter.n)
		}
	})
	t.Run("too many processes in a Pod", func(t *testing.T) {
		small, _ := newTestRuntime(t, Limits{ProcsPerPod: 1})
		pod := testPod("busybox")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan kubelet.Exit, 1)
		go func() {
			done <- small.Exec(ctx, pod, &pod.Spec.Containers[0], []string{"sleep", "60"}, kubelet.Stdio{})
		}()
		// The barrier: sleep holds the Pod's one slot. (Probing with a
		// command instead took the slot itself now and then, and sleep
		// was the one refused.)
		testutil.Eventually(t, 30*time.Second, "sleep running", func() (bool, string) {
			select {
			case exit := <-done:
				t.Fatalf("sleep 60 ended at once: %+v", exit)
			default:
			}
			small.mu.Lock()
			defer small.mu.Unlock()
			if ps := small.pods[pod.UID]; ps != nil && ps.procs == 1 {
				return true, ""
			}
			return false, "no process yet"
		})
		var errw strings.Builder
		exit := small.Exec(context.Background(), pod, &pod.Spec.Containers[0], []string{"echo"}, kubelet.Stdio{Stderr: &errw})
		if exit.Code != 126 || !strings.Contains(errw.String(), "too many processes") {
			t.Errorf("a second process ran: %d %q", exit.Code, errw.String())
		}
		cancel()
		<-done
	})
}

type countWriter struct{ n int }

func (c *countWriter) Write(b []byte) (int, error) {
	c.n += strings.Count(string(b), "\n")
	return len(b), nil
}

func TestExecUnknownCommand(t *testing.T) {
	rt, _ := newTestRuntime(t, Limits{})
	_, errOut, code := exec(t, rt, "nginx:1.29", "foo")
	want := `OCI runtime exec failed: exec failed: unable to start container process: exec: "foo": executable file not found in $PATH: unknown`
	if code != 126 || !strings.Contains(errOut, want) {
		t.Errorf("got %d %q, want 126 and %q", code, errOut, want)
	}
}

func TestRunStartError(t *testing.T) {
	rt, _ := newTestRuntime(t, Limits{})
	pod := testPod("busybox")
	c := pod.Spec.Containers[0]
	c.Command = []string{"foo"}
	exit := rt.Run(context.Background(), pod, &c, kubelet.Stdio{})
	if exit.Code != 128 || exit.Reason != "StartError" || !strings.Contains(exit.Message, `exec: "foo": executable file not found in $PATH`) {
		t.Errorf("got %+v", exit)
	}
}

func TestCurl(t *testing.T) {
	rt, n := newTestRuntime(t, Limits{})
	for _, tc := range []struct {
		name   string
		args   []string
		out    string
		code   int32
		errSub string
	}{
		{"body", []string{"curl", "-s", "http://web"}, "hello\n", 0, ""},
		{"status only", []string{"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://web.default.svc.cluster.local"}, "200", 0, ""},
		{"head", []string{"curl", "-sI", "web"}, "HTTP/1.1 200 OK\r\nServer: nginx/1.29.0\r\n", 0, ""},
		{"unknown host", []string{"curl", "-sS", "http://nope"}, "", 6, "curl: (6) Could not resolve host: nope"},
		{"refused", []string{"curl", "-sS", "http://10.96.0.99"}, "", 7, "Failed to connect to 10.96.0.99 port 80"},
		{"timeout", []string{"curl", "-sS", "-m", "0.2", "http://10.96.0.30"}, "", 28, "curl: (28)"},
		{"resolve", []string{"curl", "-s", "--resolve", "x:80:10.96.0.20", "http://x/"}, "hello\n", 0, ""},
		{"silent hides errors", []string{"curl", "-s", "http://nope"}, "", 6, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := exec(t, rt, "curlimages/curl:8.15.0", tc.args...)
			if !strings.HasPrefix(out, tc.out) || code != tc.code || !strings.Contains(errOut, tc.errSub) {
				t.Errorf("%v = %q, %d (stderr %q); want %q, %d, %q", tc.args, out, code, errOut, tc.out, tc.code, tc.errSub)
			}
		})
	}
	last := n.reqs[len(n.reqs)-1]
	if last.From == nil || last.From.Status.PodIP != "10.244.1.5" {
		t.Errorf("the request did not come from the Pod: %+v", last)
	}
}

func TestNslookup(t *testing.T) {
	rt, _ := newTestRuntime(t, Limits{})
	out, _, code := exec(t, rt, "busybox:1.36", "nslookup", "web")
	if code != 0 || !strings.Contains(out, "Name:\tweb.default.svc.cluster.local\nAddress: 10.96.0.20") {
		t.Errorf("nslookup web = %d %q", code, out)
	}
	out, _, code = exec(t, rt, "busybox:1.36", "nslookup", "nope")
	if code != 1 || !strings.Contains(out, "NXDOMAIN") {
		t.Errorf("nslookup nope = %d %q", code, out)
	}
}

func TestImages(t *testing.T) {
	for _, tc := range []struct {
		ref, repo string
		known     bool
	}{
		{"nginx", "nginx", true},
		{"nginx:1.29", "nginx", true},
		{"docker.io/library/nginx:1.29@sha256:abc", "nginx", true},
		{"curlimages/curl:8.15.0", "curlimages/curl", true},
		{"registry.k8s.io/e2e-test-images/agnhost:2.66", "e2e-test-images/agnhost", true},
		{"registry.k8s.io/pause:3.10", "pause", true},
		{"ghcr.io/ccmlab/echo:v1", "ccmlab/echo", false},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			if got := repository(tc.ref); got != tc.repo {
				t.Errorf("repository(%q) = %q, want %q", tc.ref, got, tc.repo)
			}
			if _, ok := lookupImage(tc.ref); ok != tc.known {
				t.Errorf("known(%q) = %v", tc.ref, ok)
			}
		})
	}
	img, _ := lookupImage("curlimages/curl")
	if got := argv(img, nil, []string{"curl", "-s", "x"}); strings.Join(got, " ") != "/entrypoint.sh curl -s x" {
		t.Errorf("argv = %q", got)
	}
	if got := argv(img, []string{"sh", "-c"}, []string{"echo"}); strings.Join(got, " ") != "sh -c echo" {
		t.Errorf("argv = %q", got)
	}
}
