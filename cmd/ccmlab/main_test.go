package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ccmlab/ccmlab/internal/testutil"
)

// These tests run the real binary, because what they check is what a user
// sees: exit codes, the one-line errors, and a restart of the whole process.
// Under -short (make test-unit) the binary is not built, since that links
// all of Kubernetes, and every test here skips.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	path, cleanup, err := testutil.BuildCCMLab()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = path
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// needBinary skips t under -short, where TestMain builds no binary.
func needBinary(t testing.TB) {
	t.Helper()
	if binary == "" {
		t.Skip("runs the ccmlab binary (not built under -short)")
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// process is a running ccmlab.
type process struct {
	addr   string
	cmd    *exec.Cmd
	out    *bytes.Buffer
	ready  chan string // the kubeconfig path from the ready line
	stderr *bytes.Buffer
}

func startProcess(t testing.TB, dataDir string, args ...string) *process {
	t.Helper()
	addr := freeAddr(t)
	args = append([]string{"--data-dir", dataDir, "--listen", addr}, args...)
	cmd := exec.Command(binary, args...)
	pr, pw := io.Pipe()
	l := &process{addr: addr, cmd: cmd, out: &bytes.Buffer{}, stderr: &bytes.Buffer{}, ready: make(chan string, 1)}
	cmd.Stdout = pw
	cmd.Stderr = l.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			l.out.WriteString(line + "\n")
			if strings.HasPrefix(line, "ccmlab is ready:") {
				_, kubeconfig, _ := strings.Cut(line, "kubeconfig: ")
				l.ready <- kubeconfig
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		pw.Close()
	})
	select {
	case <-l.ready:
	case <-time.After(2 * time.Minute):
		t.Fatalf("lab not ready; output:\n%s\nstderr:\n%s", l.out, l.stderr)
	}
	return l
}

// stop sends SIGTERM and expects a clean exit.
func (l *process) stop(t *testing.T) {
	t.Helper()
	if err := l.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ccmlab exited with %v; stderr:\n%s", err, l.stderr)
		}
	case <-time.After(time.Minute):
		t.Fatal("ccmlab did not stop within a minute of SIGTERM")
	}
}

func clientFor(t testing.TB, dataDir string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRestartKeepsObjects(t *testing.T) {
	needBinary(t)
	dataDir := t.TempDir()
	ctx := context.Background()
	l := startProcess(t, dataDir)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survivor"}, Data: map[string]string{"k": "v"}}
	if _, err := clientFor(t, dataDir).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The embedded kubectl finds the lab through CCMLAB_DATA_DIR.
	kubectl := exec.Command(binary, "kubectl", "get", "ns", "-o", "name")
	kubectl.Env = append(os.Environ(), "CCMLAB_DATA_DIR="+dataDir, "KUBECONFIG=")
	out, err := kubectl.CombinedOutput()
	if err != nil {
		t.Fatalf("ccmlab kubectl: %v\n%s", err, out)
	}

	// A page connected to the live stream is told goodbye on SIGTERM, so it
	// shows "reconnecting" rather than an error.
	ws, _, err := websocket.Dial(ctx, "ws://"+l.addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	// The first message is the whole snapshot, kube-system's add-on Pods
	// included: past coder/websocket's default 32 KiB read limit, as a
	// browser (which has none) reads it.
	ws.SetReadLimit(4 << 20)
	var first struct {
		Type string `json:"type"`
		Data struct {
			Epoch string `json:"epoch"`
			Nodes []any  `json:"nodes"`
		} `json:"data"`
	}
	if err := wsjson.Read(ctx, ws, &first); err != nil || first.Type != "snapshot" || first.Data.Epoch == "" {
		t.Fatalf("first websocket message = %+v, %v; want a snapshot with an epoch", first, err)
	}
	byeSeen := make(chan bool, 1)
	go func() {
		for {
			var m struct{ Type string }
			if err := wsjson.Read(ctx, ws, &m); err != nil {
				byeSeen <- false
				return
			}
			if m.Type == "bye" {
				byeSeen <- true
				return
			}
		}
	}()
	for _, ns := range []string{"default", "kube-node-lease", "kube-public", "kube-system"} {
		if !strings.Contains(string(out), "namespace/"+ns) {
			t.Errorf("ccmlab kubectl get ns lacks %s:\n%s", ns, out)
		}
	}
	l.stop(t)
	if !<-byeSeen {
		t.Error("the websocket closed without a bye message")
	}

	startProcess(t, dataDir)
	got, err := clientFor(t, dataDir).CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Fatalf("after restart the ConfigMap holds %v", got.Data)
	}
}

// The embedded kubectl behaves like kubectl: it takes kubectl's logging
// flags, and both its client and the embedded apiserver report the
// Kubernetes version in go.mod, not component-base's placeholder (the test
// binary is built with plain go build, without the Makefile's -X flags).
func TestKubectl(t *testing.T) {
	needBinary(t)
	mod, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(mod))
	dataDir := t.TempDir()
	startProcess(t, dataDir, "--nodes", "1")
	tests := []struct {
		name       string
		args       []string
		wantOut    []string
		wantStderr []string
	}{
		{"version", []string{"version", "-o", "json"},
			[]string{`"gitVersion": "` + want + `"`, `"serverVersion"`, `"clientVersion"`}, nil},
		{"-v=6 before the verb", []string{"-v=6", "get", "ns", "-o", "name"},
			[]string{"namespace/default"}, []string{`verb="GET" url="https://127.0.0.1:`, "/api/v1/namespaces"}},
		{"--v 6 after the verb", []string{"get", "ns", "-o", "name", "--v", "6"},
			[]string{"namespace/default"}, []string{"/api/v1/namespaces"}},
		{"--vmodule", []string{"--vmodule=round_trippers=6", "get", "ns", "-o", "name"},
			[]string{"namespace/default"}, []string{"/api/v1/namespaces"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(binary, append([]string{"kubectl"}, tt.args...)...)
			cmd.Env = append(os.Environ(), "CCMLAB_DATA_DIR="+dataDir, "KUBECONFIG=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("ccmlab kubectl %s: %v\n%s", strings.Join(tt.args, " "), err, &stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, &stdout)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, &stderr)
				}
			}
		})
	}
}

// snapshot lists a directory tree with sizes and mtimes, to prove a failed
// start leaves existing data untouched.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %d\n", path, info.Size(), info.ModTime().UnixNano())
		return nil
	})
	return b.String()
}

func TestBadInput(t *testing.T) {
	needBinary(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--bogus"}, "unknown flag: --bogus"},
		{"unusable data dir", []string{"--data-dir", filepath.Join(file, "lab")}, "is not usable"},
		{"listen port in use", []string{"--listen", busy.Addr().String()}, "address already in use"},
		{"listen without port", []string{"--listen", "localhost"}, "missing port"},
		{"negative nodes", []string{"--nodes", "-1"}, "--nodes -1"},
		{"stray argument", []string{"serve", "extra"}, "unknown command"},
		{"unknown profile", []string{"--profile", "gcp"}, `unknown profile "gcp"`},
		{"unknown controller", []string{"--controllers", "node,bogus"}, `unknown controller "bogus"`},
		{"controller absent in profile", []string{"--profile", "kubevirt", "--controllers", "service"}, "the kubevirt profile has no service controller"},
		{"unknown add-on", []string{"--addons", "istio"}, "unknown add-on"},
		{"exposed without token", []string{"--listen", "0.0.0.0:0"}, "set --token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectRefused(t, tt.args, tt.want) })
	}
}

// expectRefused runs ccmlab with args on a data dir holding one file and
// expects exit != 0, one "ccmlab: ..." line containing want, and the data
// dir exactly as it was.
func expectRefused(t *testing.T, args []string, want string) {
	t.Helper()
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, "marker"), []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dataDir)
	full := append([]string{"--data-dir", dataDir, "--listen", "127.0.0.1:0"}, args...)
	if args[0] == "serve" {
		full = append(slices.Clone(args), "--data-dir", dataDir)
	}
	cmd := exec.Command(binary, full...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("ccmlab exited 0, want an error")
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "ccmlab: ") || !strings.Contains(lines[0], want) {
		t.Fatalf("stderr = %q, want one line containing %q", stderr.String(), want)
	}
	if after := snapshot(t, dataDir); after != before {
		t.Fatalf("data dir changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestAttach runs one ccmlab as "the existing cluster" (its control plane,
// no nodes, no CCM) and a second one attached to it with --kubeconfig: the
// second lab's nodes join the first one's cluster and its CCM initializes
// them; its data dir gets a kubeconfig that works.
func TestAttach(t *testing.T) {
	needBinary(t)
	ctx := context.Background()
	hostDir, labDir := t.TempDir(), t.TempDir()
	startProcess(t, hostDir, "--nodes", "0", "--controllers", "none")
	attached := startProcess(t, labDir, "--kubeconfig", filepath.Join(hostDir, "kubeconfig"), "--nodes", "2")
	if !strings.Contains(attached.out.String(), "attached to https://127.0.0.1:") {
		t.Errorf("output does not say where it attached:\n%s", attached.out)
	}

	// The ready line waits for the Node controller; the host cluster sees
	// the attached lab's nodes initialized.
	// The host's own control-plane node is left out: it is the host lab's.
	nodes, err := clientFor(t, hostDir).CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "!node-role.kubernetes.io/control-plane"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("host cluster has %d nodes, want the attached lab's 2", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		if !strings.HasPrefix(n.Spec.ProviderID, "aws:///") {
			t.Errorf("node %s providerID %q, want aws:///...", n.Name, n.Spec.ProviderID)
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == "node.cloudprovider.kubernetes.io/uninitialized" {
				t.Errorf("node %s still has the uninitialized taint", n.Name)
			}
		}
	}

	// <data-dir>/kubeconfig of the attached lab reaches the same cluster.
	kubectl := exec.Command(binary, "kubectl", "get", "nodes", "-o", "name", "-l", "!node-role.kubernetes.io/control-plane")
	kubectl.Env = append(os.Environ(), "CCMLAB_DATA_DIR="+labDir, "KUBECONFIG=")
	out, err := kubectl.CombinedOutput()
	if err != nil {
		t.Fatalf("ccmlab kubectl: %v\n%s", err, out)
	}
	if got := strings.Count(string(out), "node/"); got != 2 {
		t.Errorf("ccmlab kubectl get nodes in the attached lab lists %d nodes:\n%s", got, out)
	}
	attached.stop(t)
}

func TestAttachBadInput(t *testing.T) {
	needBinary(t)
	dead := filepath.Join(t.TempDir(), "dead-kubeconfig")
	// A cluster on a port nobody listens on.
	addr := freeAddr(t)
	if err := os.WriteFile(dead, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://`+addr+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"missing kubeconfig", []string{"--kubeconfig", filepath.Join(t.TempDir(), "nope")}, "no such file"},
		{"unreachable cluster", []string{"--kubeconfig", dead}, "cannot reach the cluster at https://" + addr},
		{"cluster CIDR without kubeconfig", []string{"--cluster-cidr", "10.244.0.0/16"}, "only applies with --kubeconfig"},
		{"bad cluster CIDR", []string{"--kubeconfig", dead, "--cluster-cidr", "10.244.0.0/33"}, `--cluster-cidr "10.244.0.0/33"`},
		{"cluster CIDR too small", []string{"--kubeconfig", dead, "--cluster-cidr", "10.244.0.0/28"}, "too small"},
	} {
		t.Run(tt.name, func(t *testing.T) { expectRefused(t, tt.args, tt.want) })
	}
}
