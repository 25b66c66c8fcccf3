package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccmlab/ccmlab/internal/testutil"
)

// kubectlIn runs the embedded kubectl against the lab in dataDir.
func kubectlIn(t *testing.T, dataDir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"kubectl"}, args...)...)
	cmd.Env = append(os.Environ(), "CCMLAB_DATA_DIR="+dataDir, "KUBECONFIG=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, &errOut)
	}
	return out.String(), nil
}

func mustKubectl(t *testing.T, dataDir string, args ...string) string {
	t.Helper()
	out, err := kubectlIn(t, dataDir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func apiCall(t *testing.T, l *process, method, path string, body any) []byte {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, "http://"+l.addr+"/api"+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, &out)
	}
	return out.Bytes()
}

// TestClusterLooksReal: the control plane and the CCM are Pods in
// kube-system on a control-plane node, and kubectl logs reaches the
// simulated kubelets through the apiserver's egress proxy.
func TestClusterLooksReal(t *testing.T) {
	needBinary(t)
	dataDir := t.TempDir()
	l := startProcess(t, dataDir, "--nodes", "2")
	c := clientFor(t, dataDir)
	ctx := context.Background()
	eventually := func(t *testing.T, what string, cond func() (bool, string)) {
		t.Helper()
		testutil.Eventually(t, 60*time.Second, what, cond)
	}

	// The control plane's mirror Pods are named <component>-<node>; the
	// CCM's is its DaemonSet's, aws-cloud-controller-manager-<suffix>.
	const ccmDS = "aws-cloud-controller-manager"
	ccmPodName := func() string {
		out, _ := kubectlIn(t, dataDir, "-n", "kube-system", "get", "pods", "-l", "k8s-app="+ccmDS,
			"--field-selector=status.phase=Running", "-o", `jsonpath={.items[*].metadata.name}`)
		return strings.TrimSpace(out)
	}
	var ccmPod string
	t.Run("kube-system Pods", func(t *testing.T) {
		// The control plane and the CCM run on the control-plane node;
		// kubeadm's add-ons beside them: kube-proxy on every node (3),
		// CoreDNS's two replicas wherever the scheduler put them.
		eventually(t, "the control plane and the CCM Running on the control-plane node, CoreDNS and kube-proxy Running", func() (bool, string) {
			out, err := kubectlIn(t, dataDir, "-n", "kube-system", "get", "pods", "-o",
				`jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.spec.nodeName}{"\n"}{end}`)
			if err != nil {
				return false, err.Error()
			}
			var names []string
			node := ""
			addons := map[string]int{}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				f := strings.Fields(line)
				if len(f) != 3 || f[1] != "Running" {
					return false, out
				}
				if a, _, ok := strings.Cut(f[0], "-"); ok && (a == "coredns" || strings.HasPrefix(f[0], "kube-proxy-")) {
					if a == "kube" {
						a = "kube-proxy"
					}
					addons[a]++
					continue
				}
				if node != "" && f[2] != node {
					return false, out
				}
				node = f[2]
				comp := strings.TrimSuffix(f[0], "-"+f[2])
				if strings.HasPrefix(f[0], ccmDS+"-") {
					comp, ccmPod = ccmDS, f[0]
				} else if comp == f[0] {
					return false, out
				}
				names = append(names, comp)
			}
			slices.Sort(names)
			want := []string{ccmDS, "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
			return slices.Equal(names, want) && addons["coredns"] == 2 && addons["kube-proxy"] == 3, out
		})
		out := mustKubectl(t, dataDir, "get", "nodes", "-l", "node-role.kubernetes.io/control-plane", "-o",
			`jsonpath={range .items[*]}{.spec.taints}{.metadata.labels}{end}`)
		for _, w := range []string{`"key":"node-role.kubernetes.io/control-plane"`, `"node.kubernetes.io/exclude-from-external-load-balancers":""`} {
			if !strings.Contains(out, w) {
				t.Errorf("the control-plane node lacks %s: %s", w, out)
			}
		}
	})
	if ccmPod == "" {
		t.Fatal("no CCM Pod")
	}

	t.Run("the CCM Pod's spec", func(t *testing.T) {
		out := mustKubectl(t, dataDir, "-n", "kube-system", "get", "pod", ccmPod, "-o", "jsonpath={.spec.tolerations}")
		if !strings.Contains(out, `"key":"node.cloudprovider.kubernetes.io/uninitialized"`) {
			t.Errorf("the CCM Pod does not tolerate the uninitialized taint: %s", out)
		}
		controllersFlag := func() string {
			out, err := kubectlIn(t, dataDir, "-n", "kube-system", "get", "ds", ccmDS,
				"-o", `jsonpath={.spec.template.spec.containers[0].args}`)
			if err != nil {
				return err.Error()
			}
			return out
		}
		if got := controllersFlag(); !strings.Contains(got, `"--controllers=*"`) || !strings.Contains(got, `"--cloud-provider=aws"`) {
			t.Fatalf("command %s, want --cloud-provider=aws --controllers=*", got)
		}
		apiCall(t, l, http.MethodPut, "/controllers/service", map[string]bool{"enabled": false})
		eventually(t, "--controllers=*,-service", func() (bool, string) {
			got := controllersFlag()
			return strings.Contains(got, `"--controllers=*,-service"`), got
		})
		apiCall(t, l, http.MethodPut, "/controllers/service", map[string]bool{"enabled": true})
		eventually(t, "--controllers=* again", func() (bool, string) {
			got := controllersFlag()
			return strings.Contains(got, `"--controllers=*"`), got
		})
		eventually(t, "one new CCM Pod Running", func() (bool, string) {
			name := ccmPodName()
			if name == "" || strings.Contains(name, " ") || name == ccmPod {
				return false, name
			}
			ccmPod = name
			return true, name
		})
	})

	t.Run("logs of the CCM and of an nginx Pod", func(t *testing.T) {
		mustKubectl(t, dataDir, "create", "deployment", "web", "--image=nginx:1.29", "--port=80")
		mustKubectl(t, dataDir, "expose", "deployment", "web", "--type=LoadBalancer", "--port=80")
		var lbName string
		lbIPs := map[string]bool{}
		eventually(t, "a Classic ELB for default/web", func() (bool, string) {
			var lbs []struct {
				Name      string            `json:"name"`
				Kind      string            `json:"kind"`
				Tags      map[string]string `json:"tags"`
				Addresses []struct {
					IP string `json:"ip"`
				} `json:"addresses"`
			}
			_ = json.Unmarshal(apiCall(t, l, http.MethodGet, "/cloud/loadbalancers", nil), &lbs)
			for _, lb := range lbs {
				if lb.Tags["kubernetes.io/service-name"] == "default/web" && lb.Kind == "classic" {
					lbName = lb.Name
					for _, a := range lb.Addresses {
						lbIPs[a.IP] = true
					}
				}
			}
			return lbName != "" && len(lbIPs) > 0, fmt.Sprint(lbs)
		})
		eventually(t, "the Service controller's own lines in the CCM Pod's log", func() (bool, string) {
			out, err := kubectlIn(t, dataDir, "-n", "kube-system", "logs", ccmPod)
			if err != nil {
				return false, err.Error()
			}
			return strings.Contains(out, "controller.go:402] Ensuring load balancer for service default/web"), lastLines(out, 5)
		})
		if out := mustKubectl(t, dataDir, "-n", "kube-system", "logs", ccmPod, "--tail=1"); strings.Count(out, "\n") != 1 {
			t.Errorf("--tail=1 printed %q", out)
		}
		if out := mustKubectl(t, dataDir, "-n", "kube-system", "logs", "-l", "component=kube-scheduler", "--tail=-1"); !strings.Contains(out, "] ") {
			t.Errorf("the scheduler's log is empty or not klog: %q", lastLines(out, 3))
		}

		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodeIPs := map[string]bool{}
		for _, n := range nodes.Items {
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					nodeIPs[a.Address] = true
				}
			}
		}
		// The page's requests come from TEST-NET-3's 203.0.113.10
		// (dataplane's default client).
		send := func() {
			eventually(t, "a request through the load balancer answered 200", func() (bool, string) {
				var tr struct {
					Status int `json:"status"`
				}
				body := apiCall(t, l, http.MethodPost, "/requests", map[string]string{"kind": "loadbalancer", "lb": lbName})
				_ = json.Unmarshal(body, &tr)
				return tr.Status == 200, string(body)
			})
		}
		lastField := func() string {
			out := mustKubectl(t, dataDir, "logs", "deploy/web", "--tail=1")
			f := strings.Fields(out)
			if len(f) < 9 || !strings.Contains(out, `"GET / HTTP/1.1" 200 `) {
				t.Fatalf("not an nginx combined log line: %q", out)
			}
			return f[0]
		}
		const client = "203.0.113.10"
		send()
		if ip := lastField(); !nodeIPs[ip] {
			t.Errorf("under externalTrafficPolicy Cluster the Pod saw %s, want a node IP (%v)", ip, nodeIPs)
		}
		mustKubectl(t, dataDir, "patch", "svc", "web", "-p", `{"spec":{"externalTrafficPolicy":"Local"}}`)
		// A Classic ELB proxies TCP: under Local too the Pod sees the
		// ELB's own address in the VPC, never the client's (only an NLB,
		// app/upstreamtest, keeps it).
		eventually(t, "the Pod seeing the ELB's address under Local", func() (bool, string) {
			send()
			ip := lastField()
			if ip == client {
				t.Fatalf("behind a Classic ELB the Pod saw the client's own IP %s", ip)
			}
			return lbIPs[ip], ip
		})
		out := mustKubectl(t, dataDir, "describe", "pod", "-l", "app=web")
		for _, w := range []string{"Scheduled", "Pulled", "Created", "Started", "kubelet"} {
			if !strings.Contains(out, w) {
				t.Errorf("kubectl describe pod lacks %s:\n%s", w, out)
			}
		}
	})

	t.Run("logs -f ends when the Pod is deleted", func(t *testing.T) {
		pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("no web Pod: %v", err)
		}
		pod := pods.Items[0].Name
		cmd := exec.Command(binary, "kubectl", "logs", "-f", pod)
		cmd.Env = append(os.Environ(), "CCMLAB_DATA_DIR="+dataDir, "KUBECONFIG=")
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		eventually(t, "the follower printing the log so far", func() (bool, string) {
			return strings.Contains(out.String(), "GET /"), out.String()
		})
		select {
		case err := <-done:
			t.Fatalf("kubectl logs -f ended before the Pod was deleted: %v\n%s", err, out)
		default:
		}
		mustKubectl(t, dataDir, "delete", "pod", pod, "--wait=false")
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("kubectl logs -f ended with %v:\n%s", err, out)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("kubectl logs -f did not end within 30s of the Pod's deletion")
		}
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
