package controlplane

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Nothing leaves loopback. Every address the apiserver dials that a user can
// write (a webhook's URL or Service, an APIService's Service, a Node's
// address for logs and proxy) goes through its egress selector
// (k8s.io/apiserver/pkg/server/egressselector), which the lab configures to
// send both networks such addresses belong to through one HTTP CONNECT proxy
// of its own, on loopback:
//   - "cluster": kubelets, Service-referenced webhooks and APIServices, the
//     pods/services/nodes proxy subresources;
//   - "controlplane": webhooks by URL (admission and CRD conversion), and the
//     authentication, authorization, audit and tracing webhooks the lab does
//     not configure.
// The proxy tells the two apart by the client certificate the apiserver
// shows for each, and dials through one allowlist (egressProxy.dial): on the
// cluster network the simulated kubelets and the lab's Pods (the
// ClusterDialer the lab sets), on the control-plane network nothing. Everything else, and every host
// name (the proxy never resolves one), is refused with a sentence the
// failing kubectl command shows. So a node's address never has to resolve or
// be routable on the host (no /etc/hosts, no root), and the apiserver itself
// runs unmodified.
//
// The "etcd" network stays Direct: the apiserver's etcd client dials only
// --etcd-servers, which the lab writes (the etcd loopback URL startEtcd
// chose), and a tunnel would add a TLS hop to every storage byte.

// ClusterDialer opens a connection to addr ("host:port" as the apiserver
// asked for it: a node's address and its kubelet port, or a Pod's IP and
// port). It is the cluster network's allowlist: it connects only to
// endpoints the lab serves itself (the simulated kubelets, the ports the
// lab's Pods listen on). For an address it does not serve it returns an
// error with a method NotInLab() bool that returns true; the student then
// sees the lab's refusal (RefusedError) rather than a network error.
type ClusterDialer func(ctx context.Context, addr string) (net.Conn, error)

// RefusedError is the proxy's answer to an address that is not the lab's.
// Its text reaches the student: the apiserver quotes the proxy's status line
// in the failing request's error ("proxy error from ... while dialing
// <addr>, code 502: 502 dial refused by the lab: ...",
// egress_selector.go:128-131).
type RefusedError struct {
	Addr   string
	Reason string // why, when there is more to say than "not an address of this lab"
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("dial refused by the lab: %s is not an address of this lab", e.Addr)
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg
}

// egressNetwork is one of the apiserver's egress selections
// (egressselector/config.go: "controlplane", "cluster", "etcd").
type egressNetwork string

const (
	egressCluster      egressNetwork = "cluster"
	egressControlPlane egressNetwork = "controlplane"
)

// Client certificate CommonNames the apiserver shows the proxy, one per
// network. The cluster one keeps the name of the lab's first, cluster-only
// proxy, so existing data dirs need only the new one.
const (
	egressClusterCN      = "system:konnectivity-client"
	egressControlPlaneCN = "system:konnectivity-client:controlplane"
)

func networkOf(cs tls.ConnectionState) (egressNetwork, bool) {
	if len(cs.PeerCertificates) == 0 {
		return "", false
	}
	switch cs.PeerCertificates[0].Subject.CommonName {
	case egressClusterCN:
		return egressCluster, true
	case egressControlPlaneCN:
		return egressControlPlane, true
	}
	return "", false
}

func (p pki) KonnectivityServerCert() string { return p.path("konnectivity-server.crt") }
func (p pki) KonnectivityServerKey() string  { return p.path("konnectivity-server.key") }
func (p pki) KonnectivityClientCert() string { return p.path("konnectivity-client.crt") }
func (p pki) KonnectivityClientKey() string  { return p.path("konnectivity-client.key") }
func (p pki) ControlPlaneEgressCert() string { return p.path("konnectivity-client-controlplane.crt") }
func (p pki) ControlPlaneEgressKey() string  { return p.path("konnectivity-client-controlplane.key") }
func (p pki) KubeletClientCert() string      { return p.path("apiserver-kubelet-client.crt") }
func (p pki) KubeletClientKey() string       { return p.path("apiserver-kubelet-client.key") }

// ensureEgressPKI adds the proxy's and the apiserver's credentials: the
// proxy's serving pair, the apiserver's client pairs for the proxy (one per
// network), and the client pair the apiserver shows kubelets (kubeadm's
// apiserver-kubelet-client).
func (p pki) ensureEgressPKI() error {
	ca, key, err := p.ensureCA()
	if err != nil {
		return err
	}
	for _, l := range []struct {
		cert, key string
		tmpl      x509.Certificate
	}{
		{p.KonnectivityServerCert(), p.KonnectivityServerKey(), x509.Certificate{
			Subject:     pkix.Name{CommonName: "konnectivity-server"},
			DNSNames:    []string{"localhost"},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}},
		{p.KonnectivityClientCert(), p.KonnectivityClientKey(), x509.Certificate{
			Subject:     pkix.Name{CommonName: egressClusterCN},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
		{p.ControlPlaneEgressCert(), p.ControlPlaneEgressKey(), x509.Certificate{
			Subject:     pkix.Name{CommonName: egressControlPlaneCN},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
		{p.KubeletClientCert(), p.KubeletClientKey(), x509.Certificate{
			Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"kubeadm:cluster-admins"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
	} {
		if err := p.ensureLeaf(l.cert, l.key, ca, key, l.tmpl); err != nil {
			return err
		}
	}
	return nil
}

// egressProxy is the HTTP CONNECT proxy. It only accepts clients with a
// certificate from the lab's CA, and serves only the apiserver's egress
// client certificates (networkOf): the student's admin certificate comes
// from the same CA.
type egressProxy struct {
	ln     net.Listener
	dialer atomic.Pointer[ClusterDialer]
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	// max bounds len(conns): Config.EgressMaxTunnels.
	max int
}

func (cp *ControlPlane) startEgressProxy() error {
	if err := cp.pki.ensureEgressPKI(); err != nil {
		return fmt.Errorf("egress certificates: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(cp.pki.KonnectivityServerCert(), cp.pki.KonnectivityServerKey())
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(cp.pki.CACert())
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	})
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	p := &egressProxy{ln: ln, conns: map[net.Conn]struct{}{}, max: cp.cfg.EgressMaxTunnels}
	cp.egress = p
	if err := cp.writeEgressConfig(ln.Addr().String()); err != nil {
		ln.Close()
		return err
	}
	p.wg.Go(p.serve)
	return nil
}

// egressConfigPath is the EgressSelectorConfiguration the apiserver reads.
func (cp *ControlPlane) egressConfigPath() string {
	return filepath.Join(cp.cfg.DataDir, "egress-selector.yaml")
}

func (cp *ControlPlane) writeEgressConfig(addr string) error {
	return os.WriteFile(cp.egressConfigPath(), []byte(egressConfig(addr, cp.pki)), 0o600)
}

// egressConfig sends the cluster and control-plane networks through the
// proxy at addr, each with its own client certificate, and names etcd's
// Direct so that no network is left to the default (a network without a
// selection is dialled directly, egress_selector.go:408-415).
func egressConfig(addr string, p pki) string {
	tunnel := func(name, cert, key string) string {
		return fmt.Sprintf(`- name: %s
  connection:
    proxyProtocol: HTTPConnect
    transport:
      tcp:
        url: https://%s
        tlsConfig:
          caBundle: %s
          clientKey: %s
          clientCert: %s
`, name, addr, p.CACert(), key, cert)
	}
	return `apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
` + tunnel(string(egressCluster), p.KonnectivityClientCert(), p.KonnectivityClientKey()) +
		tunnel(string(egressControlPlane), p.ControlPlaneEgressCert(), p.ControlPlaneEgressKey()) +
		`- name: etcd
  connection:
    proxyProtocol: Direct
`
}

// egressArgs are the apiserver flags that send kubelet traffic through the
// proxy and make it trust kubelets' serving certificates.
func (cp *ControlPlane) egressArgs() []string {
	return []string{
		"--egress-selector-config-file=" + cp.egressConfigPath(),
		"--kubelet-certificate-authority=" + cp.pki.CACert(),
		"--kubelet-client-certificate=" + cp.pki.KubeletClientCert(),
		"--kubelet-client-key=" + cp.pki.KubeletClientKey(),
	}
}

// SetClusterDialer sets where the proxy sends cluster-network tunnels; until
// it is set (or with nil) the cluster network has no address of the lab and
// every tunnel is refused.
func (cp *ControlPlane) SetClusterDialer(d ClusterDialer) {
	if cp.egress == nil {
		return
	}
	if d == nil {
		cp.egress.dialer.Store(nil)
		return
	}
	cp.egress.dialer.Store(&d)
}

// CA returns the lab CA's certificate and key in PEM, for components that
// issue their own serving certificates (the kubelets).
func (cp *ControlPlane) CA() (certPEM, keyPEM []byte, err error) {
	if certPEM, err = os.ReadFile(cp.pki.CACert()); err != nil {
		return nil, nil, err
	}
	if keyPEM, err = os.ReadFile(cp.pki.CAKey()); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

func (p *egressProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		ok, full := p.track(c, true)
		if !ok {
			c.Close()
			return
		}
		p.wg.Go(func() {
			defer p.track(c, false)
			defer c.Close()
			if full {
				p.refuseFull(c)
				return
			}
			p.handle(c)
		})
	}
}

// track adds or removes c. On add, ok is false once the proxy is closed,
// and full says that the tunnels already open reach the limit: c is still
// tracked (so close cuts it) but gets only a refusal.
func (p *egressProxy) track(c net.Conn, add bool) (ok, full bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !add {
		delete(p.conns, c)
		return true, false
	}
	if p.closed {
		return false, false
	}
	full = p.max > 0 && len(p.conns) >= p.max
	p.conns[c] = struct{}{}
	return true, full
}

// refuseFull answers a CONNECT past the tunnel limit with 503; the
// apiserver quotes the status line in the student's failing command.
func (p *egressProxy) refuseFull(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	tc, ok := c.(*tls.Conn)
	if !ok || tc.Handshake() != nil {
		return
	}
	if _, err := http.ReadRequest(bufio.NewReader(io.LimitReader(c, 8<<10))); err != nil {
		return
	}
	reply(c, http.StatusServiceUnavailable, fmt.Sprintf("the lab holds at most %d open connections to nodes and Pods (exec, attach, logs -f, port-forward, proxy); close some and try again", p.max))
}

func (p *egressProxy) handle(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	tc, ok := c.(*tls.Conn)
	if !ok || tc.Handshake() != nil {
		return
	}
	network, ok := networkOf(tc.ConnectionState())
	if !ok {
		reply(c, http.StatusForbidden, "only the apiserver's egress clients may use this proxy")
		return
	}
	br := bufio.NewReader(io.LimitReader(c, 8<<10))
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		reply(c, http.StatusMethodNotAllowed, "")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	up, err := p.dial(ctx, network, req.URL.Host)
	cancel()
	if err != nil {
		reply(c, http.StatusBadGateway, err.Error())
		return
	}
	defer up.Close()
	_ = c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

// dial is the one way out of the control plane: every tunnel the apiserver
// asks for, on either network, is dialled here or refused here. addr must be
// an IP and a port (a name is never resolved: that would be a packet to the
// host's resolver); on the cluster network the ClusterDialer decides whether
// it is one of the lab's kubelets; the control-plane network has no address
// of the lab (no component of the lab serves a webhook, and the apiserver
// reaches itself, kubernetes.default.svc:443, without dialling:
// k8s.io/apiserver/pkg/util/webhook/authentication.go:53-55).
func (p *egressProxy) dial(ctx context.Context, network egressNetwork, addr string) (net.Conn, error) {
	if _, err := netip.ParseAddrPort(addr); err != nil {
		return nil, &RefusedError{Addr: addr, Reason: "the lab resolves no host names"}
	}
	if network != egressCluster {
		return nil, &RefusedError{Addr: addr}
	}
	d := p.dialer.Load()
	if d == nil {
		return nil, &RefusedError{Addr: addr, Reason: "no simulated node is running"}
	}
	c, err := (*d)(ctx, addr)
	var notInLab interface{ NotInLab() bool }
	if errors.As(err, &notInLab) && notInLab.NotInLab() {
		return nil, &RefusedError{Addr: addr, Reason: err.Error()}
	}
	return c, err
}

// reply answers a CONNECT with status code and, as the reason phrase, msg:
// the apiserver quotes only the status line (egress_selector.go:128-131).
func reply(c net.Conn, code int, msg string) {
	if msg == "" {
		msg = http.StatusText(code)
	}
	msg = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, msg)
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n\r\n", code, msg)
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// close stops accepting and cuts open tunnels.
func (p *egressProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}
