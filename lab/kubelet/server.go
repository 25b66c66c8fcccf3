package kubelet

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/internal/podlog"
)

// The kubelet API, as much of it as `kubectl logs` needs: GET
// /containerLogs/{namespace}/{pod}/{container} with follow, tailLines,
// sinceSeconds, sinceTime, timestamps and limitBytes, the parameters the
// apiserver passes on from kubectl. One HTTPS server on loopback serves
// every node; the apiserver reaches it through its egress proxy, which
// calls Manager.DialNode with the node address it wanted. The server shows
// that node a certificate signed by the lab's CA for the node's names and
// IPs (so the apiserver's --kubelet-certificate-authority check passes as
// with a real kubelet) and only answers clients with a certificate from
// the same CA.

type apiServer struct {
	m      *Manager
	ln     net.Listener
	srv    *http.Server
	ca     *x509.Certificate
	caKey  crypto.Signer
	byConn sync.Map // remote address of a dialled conn -> node name

	mu    sync.Mutex
	certs map[string]*tls.Certificate // by node name + addresses
}

func newAPIServer(m *Manager) (*apiServer, error) {
	if m.cfg.Logs == nil || len(m.cfg.CACertPEM) == 0 {
		return nil, nil
	}
	block, err := certFromPEM(m.cfg.CACertPEM)
	if err != nil {
		return nil, err
	}
	keyAny, err := keyutil.ParsePrivateKeyPEM(m.cfg.CAKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("kubelet: CA key: %w", err)
	}
	key, ok := keyAny.(crypto.Signer)
	if !ok {
		return nil, errors.New("kubelet: CA key cannot sign")
	}
	s := &apiServer{m: m, ca: block, caKey: key, certs: map[string]*tls.Certificate{}}
	pool := x509.NewCertPool()
	pool.AddCert(block)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}
	s.ln = tls.NewListener(ln, &tls.Config{
		GetCertificate: s.certificate,
		ClientAuth:     tls.RequireAndVerifyClientCert,
		ClientCAs:      pool,
		MinVersion:     tls.VersionTLS12,
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.containerLogs)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	s.mountStreams(mux) // streams.go
	s.srv, err = httpguard.NewServer(httpguard.ServerConfig{
		Handler: mux,
		// No WriteTimeout: the one client is the apiserver (mutual TLS),
		// and `kubectl logs -f` and exec streams write for as long as
		// kubectl reads; a paused kubectl (a pager) pauses them. The real
		// kubelet allows 4 h. The default IdleTimeout (2 min) outlasts
		// the apiserver's own 90 s, so the apiserver closes first.
		Timeouts: httpguard.Timeouts{WriteTimeout: httpguard.Never},
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				s.byConn.Delete(c.RemoteAddr().String())
			}
		},
		// A client without the CA's certificate fails its handshake; that
		// is the server doing its job, not news for the terminal.
		ErrorLog: slog.NewLogLogger(m.log.Handler(), slog.LevelDebug),
	})
	if err != nil {
		s.ln.Close()
		return nil, err
	}
	return s, nil
}

func certFromPEM(pemBytes []byte) (*x509.Certificate, error) {
	certs, err := certutil.ParseCertsPEM(pemBytes)
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("kubelet: CA certificate: %v", err)
	}
	return certs[0], nil
}

// APIAddr is the kubelet API's loopback address ("" when it does not run).
func (m *Manager) APIAddr() string {
	if m.api == nil {
		return ""
	}
	return m.api.ln.Addr().String()
}

func (s *apiServer) serve() error {
	err := s.srv.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (s *apiServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
}

// DialNode connects to the kubelet API of the node at addr ("host:port",
// host a node name, or one of its addresses or its instance's), as a
// cluster network would. A node whose kubelet does not run cannot be
// reached, like a stopped VM. Any other address is tried as a Pod's
// (DialPod), so the control plane's cluster network reaches both.
func (m *Manager) DialNode(ctx context.Context, addr string) (net.Conn, error) {
	if m.api == nil {
		return nil, errors.New("the kubelet API is not running")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	k := m.kubeletForAddress(host)
	if k == nil {
		// Not a node's address: a Pod's IP (podconn.go).
		return m.DialPod(ctx, addr)
	}
	if port != strconv.Itoa(kubeletPort) {
		return nil, fmt.Errorf("dial %s: connection refused (only the kubelet port %d is served)", addr, kubeletPort)
	}
	if !k.running() {
		return nil, fmt.Errorf("dial %s: i/o timeout (the node's instance is not running)", addr)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", m.api.ln.Addr().String())
	if err != nil {
		return nil, err
	}
	m.api.byConn.Store(c.LocalAddr().String(), k.name)
	return c, nil
}

// notInLab marks an address no simulated node has; the control plane's
// egress proxy answers it with the lab's refusal (controlplane.ClusterDialer).
type notInLab struct{ error }

func (notInLab) NotInLab() bool  { return true }
func (e notInLab) Unwrap() error { return e.error }

func (m *Manager) kubeletForAddress(host string) *kubelet {
	if k := m.kubeletForNode(host); k != nil {
		return k
	}
	m.mu.Lock()
	for _, k := range m.byNode {
		inst := k.instance()
		if inst.PrivateIP == host || inst.PrivateDNSName == host {
			m.mu.Unlock()
			return k
		}
	}
	m.mu.Unlock()
	nodes, _ := m.nodes.List(labels.Everything())
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if a.Address == host {
				return m.kubeletForNode(n.Name)
			}
		}
	}
	return nil
}

func (s *apiServer) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name, _ := s.byConn.Load(hello.Conn.RemoteAddr().String())
	node, _ := name.(string)
	if node == "" {
		node = "localhost" // dialled directly, not through the proxy
	}
	dns, ips := []string{node}, []net.IP{}
	if k := s.m.kubeletForNode(node); k != nil {
		inst := k.instance()
		dns = append(dns, inst.PrivateDNSName)
		if ip := net.ParseIP(inst.PrivateIP); ip != nil {
			ips = append(ips, ip)
		}
	}
	if n, err := s.m.nodes.Get(node); err == nil {
		for _, a := range n.Status.Addresses {
			if ip := net.ParseIP(a.Address); ip != nil {
				ips = append(ips, ip)
			} else {
				dns = append(dns, a.Address)
			}
		}
	}
	if node == "localhost" {
		ips = append(ips, net.IPv4(127, 0, 0, 1))
	}
	slices.Sort(dns)
	dns = slices.Compact(dns)
	key := strings.Join(dns, ",") + "|" + fmt.Sprint(ips)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.certs[key]; c != nil {
		return c, nil
	}
	c, err := s.issue(node, dns, ips)
	if err != nil {
		return nil, err
	}
	if len(s.certs) > 4*maxCachedCerts {
		clear(s.certs) // addresses changed many times: start over
	}
	s.certs[key] = c
	return c, nil
}

const maxCachedCerts = 1024

// issue signs a serving certificate as a kubelet's would be after its
// CSR was approved: CN system:node:<name>, O system:nodes.
func (s *apiServer) issue(node string, dns []string, ips []net.IP) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		DNSNames:     dns,
		IPAddresses:  ips,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, key.Public(), s.caKey)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// LogKey is where a container's log lives in the store: a mirror Pod's
// under its static Pod's container, any other Pod's under its UID.
func LogKey(pod *v1.Pod, container string) string {
	if IsMirrorPod(pod) {
		return podlog.StaticKey(container)
	}
	return podlog.PodKey(string(pod.UID), container)
}

// logKey is LogKey, or the Runtime's key for a Pod it runs.
func (m *Manager) logKey(pod *v1.Pod, container string) string {
	if m.handled(pod) {
		return m.cfg.Runtime.LogKey(pod, container)
	}
	return LogKey(pod, container)
}

func (s *apiServer) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	pod, err := s.m.pods.Pods(ns).Get(name)
	if err != nil {
		http.Error(w, fmt.Sprintf("pod %s/%s not found", ns, name), http.StatusNotFound)
		return
	}
	if !hasContainer(pod, container) {
		http.Error(w, fmt.Sprintf("container %s is not valid for pod %s", container, name), http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	o, err := podlog.ParseQuery(q, s.m.cfg.Clock.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key := s.m.logKey(pod, container)
	if s.m.runsContainers(pod) {
		var ok bool
		if key, ok = s.m.containerLogKey(pod, container, q.Get("previous") == "true"); !ok {
			http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", container, name), http.StatusBadRequest)
			return
		}
	} else if q.Get("previous") == "true" && !s.m.runtimeExited(pod) {
		// A Runtime's container that exited has its log where its current
		// one is (Runtime.LogKey): the CCM's is one per process.
		http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", container, name), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Transfer-Encoding", "chunked")
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	_ = s.m.cfg.Logs.Read(r.Context(), key, o, w, flush)
}

// forgetPodLogs ends `kubectl logs -f` on a deleted Pod: a mirror Pod's
// log stays (its static Pod lives on), any other Pod's goes.
func (m *Manager) forgetPodLogs(pod *v1.Pod) {
	if m.cfg.Logs == nil {
		return
	}
	if m.runsContainers(pod) {
		m.forgetRunLogs(pod) // containers.go
		return
	}
	for _, c := range pod.Spec.Containers {
		if IsMirrorPod(pod) || m.handled(pod) {
			m.cfg.Logs.End(m.logKey(pod, c.Name))
		} else {
			m.cfg.Logs.Remove(LogKey(pod, c.Name))
		}
	}
}
