package controlplane

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// The apiserver reaches kubelets (kubectl logs, exec, port-forward) the way
// a cluster with konnectivity does: its egress selector sends "cluster"
// traffic through an HTTP CONNECT proxy. Here the proxy is the lab's, on
// loopback, and it hands each tunnel to whatever ClusterDialer the lab set:
// the simulated kubelets. So a node's address never has to resolve or be
// routable on the host (no /etc/hosts, no root), and the apiserver itself
// runs unmodified. "controlplane" and "etcd" traffic is left direct.

// ClusterDialer opens a connection to addr ("host:port" as the apiserver
// asked for it: a node's address and its kubelet port).
type ClusterDialer func(ctx context.Context, addr string) (net.Conn, error)

func (p pki) KonnectivityServerCert() string { return p.path("konnectivity-server.crt") }
func (p pki) KonnectivityServerKey() string  { return p.path("konnectivity-server.key") }
func (p pki) KonnectivityClientCert() string { return p.path("konnectivity-client.crt") }
func (p pki) KonnectivityClientKey() string  { return p.path("konnectivity-client.key") }
func (p pki) KubeletClientCert() string      { return p.path("apiserver-kubelet-client.crt") }
func (p pki) KubeletClientKey() string       { return p.path("apiserver-kubelet-client.key") }

// ensureEgressPKI adds the proxy's and the apiserver's credentials: the
// proxy's serving pair, the apiserver's client pair for the proxy, and the
// client pair the apiserver shows kubelets (kubeadm's
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
			Subject:     pkix.Name{CommonName: "system:konnectivity-client"},
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
// certificate from the lab's CA (the apiserver's konnectivity-client).
type egressProxy struct {
	ln     net.Listener
	dialer atomic.Pointer[ClusterDialer]
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
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
	p := &egressProxy{ln: ln, conns: map[net.Conn]struct{}{}}
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
	cfg := fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      tcp:
        url: https://%s
        tlsConfig:
          caBundle: %s
          clientKey: %s
          clientCert: %s
`, addr, cp.pki.CACert(), cp.pki.KonnectivityClientKey(), cp.pki.KonnectivityClientCert())
	return os.WriteFile(cp.egressConfigPath(), []byte(cfg), 0o600)
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

// SetClusterDialer sets where the proxy sends tunnels; until it is set (or
// with nil) every CONNECT is answered 503.
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
		if !p.track(c, true) {
			c.Close()
			return
		}
		p.wg.Go(func() {
			defer p.track(c, false)
			defer c.Close()
			p.handle(c)
		})
	}
}

func (p *egressProxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		if p.closed {
			return false
		}
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *egressProxy) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(io.LimitReader(c, 8<<10))
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		fmt.Fprintf(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return
	}
	d := p.dialer.Load()
	if d == nil {
		fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	up, err := (*d)(ctx, req.Host)
	cancel()
	if err != nil {
		msg := err.Error()
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
		return
	}
	defer up.Close()
	_ = c.SetReadDeadline(time.Time{})
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
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
