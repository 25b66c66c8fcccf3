package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/server/egressselector"

	"github.com/ccmlab/ccmlab/internal/testutil"
)

// countingListener accepts on 127.0.0.1 and counts every connection: the
// port a student would point a webhook at.
type countingListener struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
}

func newCountingListener(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &countingListener{ln: ln}
	l.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			c.Close()
		}
	})
	t.Cleanup(func() { ln.Close(); l.wg.Wait() })
	return l
}

func (l *countingListener) port() int { return l.ln.Addr().(*net.TCPAddr).Port }

// notInLab is how a ClusterDialer says an address is none of its own.
type notInLab struct{ error }

func (notInLab) NotInLab() bool { return true }

// startTestProxy starts the lab's egress proxy in a fresh PKI and returns
// the control plane holding it and the upstream egress selector built from
// the configuration the apiserver would read.
func startTestProxy(t *testing.T) (*ControlPlane, *egressselector.EgressSelector, *apiserverapi.EgressSelectorConfiguration) {
	t.Helper()
	dir := t.TempDir()
	cp := &ControlPlane{cfg: Config{DataDir: dir}, pki: pki{dir: dir + "/pki"}}
	cp.cfg.Defaults()
	if err := cp.pki.ensure(); err != nil {
		t.Fatal(err)
	}
	if err := cp.startEgressProxy(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.egress.close)
	cfg, err := egressselector.ReadEgressSelectorConfiguration(cp.egressConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	if errs := egressselector.ValidateEgressSelectorConfiguration(cfg); len(errs) != 0 {
		t.Fatal(errs.ToAggregate())
	}
	sel, err := egressselector.NewEgressSelector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cp, sel, cfg
}

// The proxy is the only way out of the apiserver for an address a user can
// write: driven through upstream's own egress selector, as the apiserver
// drives it, it refuses every address that is not the lab's, and nothing
// reaches a listener on another loopback port.
func TestEgressRefusesWhatIsNotTheLabs(t *testing.T) {
	cp, sel, _ := startTestProxy(t)
	other := newCountingListener(t)
	kubelet := newCountingListener(t) // stands in for the simulated kubelets' server
	cp.SetClusterDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		switch addr {
		case "10.0.0.5:10250":
			var d net.Dialer
			return d.DialContext(ctx, "tcp", kubelet.ln.Addr().String())
		case "10.0.0.5:10255":
			return nil, errors.New("dial 10.0.0.5:10255: i/o timeout (the node's instance is not running)")
		}
		return nil, notInLab{fmt.Errorf("dial %s: no route to host", addr)}
	})
	loopback := fmt.Sprintf("127.0.0.1:%d", other.port())
	byName := fmt.Sprintf("localhost:%d", other.port())
	for _, tc := range []struct {
		name    string
		network egressselector.EgressType
		addr    string
		want    string // "" for a tunnel
	}{
		{"webhook URL on another loopback port", egressselector.ControlPlane, loopback, "502 dial refused by the lab: " + loopback + " is not an address of this lab"},
		{"webhook URL by host name", egressselector.ControlPlane, byName, "502 dial refused by the lab: " + byName + " is not an address of this lab (the lab resolves no host names)"},
		{"webhook URL at the metadata service", egressselector.ControlPlane, "169.254.169.254:80", "dial refused by the lab: 169.254.169.254:80 is not an address of this lab"},
		{"webhook URL at a simulated node", egressselector.ControlPlane, "10.0.0.5:10250", "dial refused by the lab: 10.0.0.5:10250 is not an address of this lab"},
		{"Service on another loopback port", egressselector.Cluster, loopback, "dial refused by the lab: " + loopback + " is not an address of this lab (dial " + loopback + ": no route to host)"},
		{"Service by host name", egressselector.Cluster, byName, "(the lab resolves no host names)"},
		{"Service at the metadata service", egressselector.Cluster, "169.254.169.254:443", "dial refused by the lab: 169.254.169.254:443 is not an address of this lab"},
		{"a stopped node answers as the node would", egressselector.Cluster, "10.0.0.5:10255", "502 dial 10.0.0.5:10255: i/o timeout (the node's instance is not running)"},
		{"a simulated kubelet", egressselector.Cluster, "10.0.0.5:10250", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dial, err := sel.Lookup(tc.network.AsNetworkContext())
			if err != nil || dial == nil {
				t.Fatalf("no dialer for %s: %v", tc.network, err)
			}
			c, err := dial(context.Background(), "tcp", tc.addr)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
				return
			}
			if err == nil {
				c.Close()
				t.Fatalf("dial %s on %s succeeded", tc.addr, tc.network)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
	// Every dial above has returned: nothing may have reached the port.
	if n := other.accepted.Load(); n != 0 {
		t.Fatalf("%d connections reached %s", n, loopback)
	}
	// The kubelet's listener counts in its own goroutine, after Accept.
	testutil.Eventually(t, 10*time.Second, "the simulated kubelet's tunnel to connect", func() (bool, string) {
		return kubelet.accepted.Load() > 0, "no connection accepted"
	})
}

// Until the lab's kubelets run, the cluster network has no address.
func TestEgressWithoutKubelets(t *testing.T) {
	_, sel, _ := startTestProxy(t)
	dial, err := sel.Lookup(egressselector.Cluster.AsNetworkContext())
	if err != nil {
		t.Fatal(err)
	}
	_, err = dial(context.Background(), "tcp", "10.0.0.5:10250")
	want := "dial refused by the lab: 10.0.0.5:10250 is not an address of this lab (no simulated node is running)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// Every network has a selection (one left out is dialled directly), and the
// etcd one is Direct to the lab's own etcd URL only (the apiserver dials
// nothing else there: --etcd-servers).
func TestEgressConfigNamesEveryNetwork(t *testing.T) {
	_, _, cfg := startTestProxy(t)
	got := map[string]apiserverapi.ProtocolType{}
	for _, s := range cfg.EgressSelections {
		got[s.Name] = s.Connection.ProxyProtocol
	}
	want := map[string]apiserverapi.ProtocolType{
		"cluster":      apiserverapi.ProtocolHTTPConnect,
		"controlplane": apiserverapi.ProtocolHTTPConnect,
		"etcd":         apiserverapi.ProtocolDirect,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("egress selections %v, want %v", got, want)
	}
}

// Only the apiserver's egress clients may use the proxy: the student's
// admin certificate is signed by the same CA.
func TestEgressRefusesOtherClients(t *testing.T) {
	cp, _, _ := startTestProxy(t)
	other := newCountingListener(t)
	cp.SetClusterDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", other.ln.Addr().String())
	})
	for _, tc := range []struct {
		name, cert, key, want string
	}{
		{"admin", cp.pki.AdminCert(), cp.pki.AdminKey(), "HTTP/1.1 403 only the apiserver's egress clients may use this proxy"},
		{"cluster egress client", cp.pki.KonnectivityClientCert(), cp.pki.KonnectivityClientKey(), "HTTP/1.1 200 Connection established"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cert, err := tls.LoadX509KeyPair(tc.cert, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			caPEM, err := os.ReadFile(cp.pki.CACert())
			if err != nil {
				t.Fatal(err)
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(caPEM)
			c, err := tls.Dial("tcp", cp.egress.ln.Addr().String(), &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "127.0.0.1"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "CONNECT 10.0.0.5:10250 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
			buf := make([]byte, 256)
			n, err := io.ReadAtLeast(c, buf, len(tc.want))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(buf[:n]); !strings.HasPrefix(got, tc.want) {
				t.Fatalf("proxy answered %q, want %q", got, tc.want)
			}
		})
	}
}

// The tunnels open at once are bounded: past the limit a new one is refused
// with 503 and a sentence the failing kubectl shows, and one closing makes
// room again.
func TestEgressTunnelLimit(t *testing.T) {
	cp, sel, _ := startTestProxy(t)
	cp.egress.max = 2
	// An echoing Pod that holds each connection until the client closes.
	pod, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pod.Close() })
	go func() {
		for {
			c, err := pod.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	cp.SetClusterDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", pod.Addr().String())
	})
	dial, err := sel.Lookup(egressselector.Cluster.AsNetworkContext())
	if err != nil {
		t.Fatal(err)
	}
	open := func() (net.Conn, error) { return dial(context.Background(), "tcp", "10.244.1.5:80") }
	var held []net.Conn
	for range 2 {
		c, err := open()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// Both tunnels are open end to end (an echo came back through each),
	// so the proxy counts them: the third is refused.
	for _, c := range held {
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = open()
	want := "503 the lab holds at most 2 open connections to nodes and Pods"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("third tunnel: error %v, want %q", err, want)
	}
	held[0].Close()
	// The closed tunnel leaves the proxy's count once both copies end.
	testutil.Eventually(t, 10*time.Second, "room for a tunnel after one closed", func() (bool, string) {
		c, err := open()
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
	held[1].Close()
}

// The limit is a validated knob.
func TestEgressTunnelLimitValidated(t *testing.T) {
	for _, n := range []int{-1, maxEgressTunnels + 1} {
		c := Config{DataDir: t.TempDir(), EgressMaxTunnels: n}
		c.Defaults()
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), "egress tunnel limit") {
			t.Errorf("EgressMaxTunnels %d: validate() = %v", n, err)
		}
	}
}
