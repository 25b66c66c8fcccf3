package main

import (
	"bufio"
	"context"
	be "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestLoopbackOnly runs the real ccmlab where nothing but loopback exists
// (unshare -rnm: a user, network and mount namespace, whose only interface
// is lo) and /etc/resolv.conf, bind-mounted, names a stub DNS server on
// 127.0.0.1:53 that records every query. A canary lookup first proves the
// stub is listening and asked; then a Deployment and a LoadBalancer Service
// are walked to an EXTERNAL-IP (a load balancer DNS name, in the aws
// profile) and a kubelet is reached through nodes/<n>/proxy; a second
// canary is the barrier after which the stub must have heard no other
// name. The part inside the namespace is this test binary again
// (loopbackInner, started from init so that TestMain builds nothing).
func TestLoopbackOnly(t *testing.T) {
	needBinary(t)
	if out, err := exec.Command("unshare", "-rnm", "true").CombinedOutput(); err != nil {
		t.Skipf("needs user, network and mount namespaces (unshare -rnm true: %v %s)", err, strings.TrimSpace(string(out)))
	}
	if _, err := exec.LookPath("ip"); err != nil {
		// .ci/run installs iproute2: under CI a missing ip(8) is a failure.
		if os.Getenv("CI") == "true" {
			t.Fatal("needs ip(8) to bring lo up inside the namespace (apt-get install iproute2)")
		}
		t.Skip("needs ip(8) to bring lo up inside the namespace")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "-rnm", self)
	cmd.Env = append(os.Environ(), loopbackEnv+"="+binary, "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	t.Logf("inside the namespace:\n%s", out)
	if err != nil {
		t.Fatalf("the lab did not stay on loopback: %v", err)
	}
}

// loopbackEnv carries the ccmlab binary's path into the namespace.
const loopbackEnv = "CCMLAB_LOOPBACK_INNER"

func init() {
	if bin := os.Getenv(loopbackEnv); bin != "" {
		if err := loopbackInner(bin); err != nil {
			fmt.Println("FAIL:", err)
			os.Exit(1)
		}
		fmt.Println("PASS: no DNS query besides the canaries")
		os.Exit(0)
	}
}

// dnsStub answers every query NXDOMAIN and records its name.
type dnsStub struct {
	mu    sync.Mutex
	names []string
	seen  chan string
}

func (s *dnsStub) record(name string) {
	s.mu.Lock()
	s.names = append(s.names, name)
	s.mu.Unlock()
	select {
	case s.seen <- name:
	default:
	}
}

func (s *dnsStub) since(i int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.names[i:]...)
}

func (s *dnsStub) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.names)
}

// answer records msg's question and returns an NXDOMAIN for it.
func (s *dnsStub) answer(msg []byte) []byte {
	if len(msg) < 12 {
		return nil
	}
	name, end := "", 12
	for end < len(msg) && msg[end] != 0 {
		n := int(msg[end])
		if n > 63 || end+1+n > len(msg) {
			return nil
		}
		name += string(msg[end+1:end+1+n]) + "."
		end += 1 + n
	}
	end += 5 // the root label, QTYPE, QCLASS
	if end > len(msg) {
		return nil
	}
	s.record(name)
	out := append([]byte(nil), msg[:end]...)
	out[2] |= 0x80                  // a response
	out[3] = out[3]&0x70 | 0x80 | 3 // recursion available, NXDOMAIN
	be.BigEndian.PutUint16(out[4:], 1)
	clear(out[6:12])
	return out
}

func (s *dnsStub) serve(udp net.PacketConn, tcp net.Listener) {
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := s.answer(buf[:n]); out != nil {
				_, _ = udp.WriteTo(out, from)
			}
		}
	}()
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var l [2]byte
				if _, err := io.ReadFull(c, l[:]); err != nil {
					return
				}
				msg := make([]byte, be.BigEndian.Uint16(l[:]))
				if _, err := io.ReadFull(c, msg); err != nil {
					return
				}
				if out := s.answer(msg); out != nil {
					be.BigEndian.PutUint16(l[:], uint16(len(out)))
					_, _ = c.Write(append(l[:], out...))
				}
			}()
		}
	}()
}

// canary looks name up through /etc/resolv.conf and waits for the stub
// to hear it.
func (s *dnsStub) canary(ctx context.Context, name string) error {
	r := &net.Resolver{PreferGo: true}
	if _, err := r.LookupHost(ctx, name); err == nil {
		return fmt.Errorf("canary %s resolved; the stub answers NXDOMAIN", name)
	}
	for {
		for _, n := range s.since(0) {
			if n == name {
				return nil
			}
		}
		select {
		case <-s.seen:
		case <-ctx.Done():
			return fmt.Errorf("the stub DNS server never heard the canary %s: is /etc/resolv.conf the bind-mounted one?", name)
		}
	}
}

func runCmd(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// loopbackInner runs inside the namespace.
func loopbackInner(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := runCmd("ip", "link", "set", "lo", "up"); err != nil {
		return err
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifaces {
		if i.Name != "lo" {
			return fmt.Errorf("interface %s exists in the namespace; only lo should", i.Name)
		}
	}
	tmp, err := os.MkdirTemp("", "loopback-")
	if err != nil {
		return err
	}
	resolv := filepath.Join(tmp, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"), 0o644); err != nil {
		return err
	}
	if err := runCmd("mount", "--bind", resolv, "/etc/resolv.conf"); err != nil {
		return err
	}
	stub := &dnsStub{seen: make(chan string, 1)}
	udp, err := net.ListenPacket("udp", "127.0.0.1:53")
	if err != nil {
		return err
	}
	defer udp.Close()
	tcp, err := net.Listen("tcp", "127.0.0.1:53")
	if err != nil {
		return err
	}
	defer tcp.Close()
	stub.serve(udp, tcp)
	if err := stub.canary(ctx, "canary-before.ccmlab-loopback.test."); err != nil {
		return err
	}
	fmt.Println("the stub DNS server heard the first canary")
	start := stub.count()

	dataDir := filepath.Join(tmp, "data")
	lab := exec.CommandContext(ctx, bin, "--data-dir", dataDir, "--listen", "127.0.0.1:18080", "--nodes", "1")
	lab.Stderr = os.Stderr
	stdout, err := lab.StdoutPipe()
	if err != nil {
		return err
	}
	if err := lab.Start(); err != nil {
		return err
	}
	defer func() {
		_ = lab.Process.Kill()
		_ = lab.Wait()
	}()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Println("ccmlab:", sc.Text())
			if strings.HasPrefix(sc.Text(), "ccmlab is ready:") {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		return errors.New("ccmlab never said it was ready")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "kubeconfig"))
	if err != nil {
		return err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := walkService(ctx, c); err != nil {
		return err
	}
	// A request through the load balancer by its DNS name: the data plane
	// knows the name, nobody may look it up.
	resp, err := http.Post("http://127.0.0.1:18080/api/requests", "application/json", strings.NewReader(`{"service":"default/web"}`))
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("POST /api/requests: %d %s", resp.StatusCode, body)
	}
	fmt.Printf("a request through the load balancer: %.200s\n", body)
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, n := range nodes.Items {
		body, err := c.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + n.Name + "/proxy/healthz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("nodes/%s/proxy/healthz: %v %s", n.Name, err, body)
		}
		fmt.Printf("nodes/%s/proxy/healthz: %s\n", n.Name, body)
	}

	// The barrier: every query asked before it has reached the stub.
	if err := stub.canary(ctx, "canary-after.ccmlab-loopback.test."); err != nil {
		return err
	}
	var asked []string
	for _, n := range stub.since(start) {
		if n != "canary-after.ccmlab-loopback.test." {
			asked = append(asked, n)
		}
	}
	if len(asked) > 0 {
		return fmt.Errorf("the lab asked DNS for %s", strings.Join(asked, ", "))
	}
	return nil
}

// walkService creates a Deployment and a LoadBalancer Service for it and
// waits for the Deployment to be available and the Service to have an
// EXTERNAL-IP.
func walkService(ctx context.Context, c kubernetes.Interface) error {
	labels := map[string]string{"app": "web"}
	one := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}},
		},
	}
	if _, err := c.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		d, derr := c.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		s, serr := c.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if derr == nil && serr == nil && d.Status.AvailableReplicas == 1 && len(s.Status.LoadBalancer.Ingress) > 0 {
			in := s.Status.LoadBalancer.Ingress[0]
			fmt.Printf("Service web has EXTERNAL-IP %s%s\n", in.Hostname, in.IP)
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("Deployment and Service web not ready: %v %v", derr, serr)
		}
	}
}
