package outside

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
)

// LB is one load balancer as the outside sees it.
type LB struct {
	Name    string
	DNSName string
	IP      string // the ip profile's LBs have an address, no name
	// Internal: its name resolves to Private, unreachable from outside.
	Internal bool
	Private  []string
	// Listeners: listener port -> the loopback address that serves it.
	Listeners map[int32]string
}

// View is the lab's load balancers at one moment.
type View struct {
	LBs []LB
}

// NewView builds a View from the cloud's load balancers and the data
// plane's listener addresses (what /api/state carries).
func NewView(lbs []cloud.LoadBalancer, listeners []dataplane.ListenerInfo) View {
	var v View
	for i := range lbs {
		lb := &lbs[i]
		o := LB{Name: lb.Name, DNSName: strings.ToLower(lb.DNSName), IP: lb.IP, Internal: lb.Scheme == cloud.SchemeInternal,
			Private: dataplane.LBAddresses(lb), Listeners: map[int32]string{}}
		for _, l := range listeners {
			if l.LB == lb.Name {
				o.Listeners[l.Port] = l.Address
			}
		}
		v.LBs = append(v.LBs, o)
	}
	return v
}

// Public is the address a public resolver gives an internet-facing load
// balancer's name: the host of its listeners' loopback address (one
// 127.x address per load balancer in the low-port mode; 127.0.0.1
// otherwise).
func (lb LB) Public() string {
	for _, a := range lb.Listeners {
		if h, _, err := net.SplitHostPort(a); err == nil {
			return h
		}
	}
	return "127.0.0.1"
}

// byName is the load balancer whose DNS name is name.
func (v View) byName(name string) (LB, bool) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	for _, lb := range v.LBs {
		if lb.DNSName != "" && lb.DNSName == name {
			return lb, true
		}
	}
	return LB{}, false
}

// Resolve is the public DNS answer for name: an internet-facing load
// balancer's public address, an internal one's private addresses,
// localhost's 127.0.0.1; ok false for every other name.
func (v View) Resolve(name string) (addrs []string, ok bool) {
	n := strings.ToLower(strings.TrimSuffix(name, "."))
	if n == "localhost" {
		return []string{"127.0.0.1"}, true
	}
	lb, found := v.byName(n)
	if !found {
		return nil, false
	}
	if lb.Internal {
		return lb.Private, len(lb.Private) > 0
	}
	return []string{lb.Public()}, true
}

// Verdict is what becomes of a connection to an address from outside.
type Verdict int

const (
	// Connect: a real connection to Dial.
	Connect Verdict = iota
	// TimedOut: a private address (the VPC's, the cluster's, an internal
	// load balancer's, one no listener serves): no answer ever comes.
	TimedOut
	// Refused: outside the lab; the lab never sends the packet.
	Refused
)

// Route says where a connection from outside to ip:port, for the URL
// host host, goes. loopbackAny lets any loopback port through (the
// student's own shell, where curl could reach it anyway); without it
// only the load balancers' listeners are reachable (the console, which
// runs inside the lab's process and must not reach its API).
func (v View) Route(host, ip string, port int32, loopbackAny bool) (dial string, verdict Verdict) {
	a, err := netip.ParseAddr(strings.Trim(ip, "[]"))
	if err != nil {
		return "", Refused
	}
	// A load balancer named in the URL and resolved to its public
	// address: its listener on that port.
	if lb, ok := v.byName(host); ok && !lb.Internal && ip == lb.Public() {
		if addr, ok := lb.Listeners[port]; ok {
			return addr, Connect
		}
		return "", TimedOut // no listener: a security group drops it
	}
	for _, lb := range v.LBs {
		if lb.IP != "" && lb.IP == a.String() && !lb.Internal {
			if addr, ok := lb.Listeners[port]; ok {
				return addr, Connect
			}
			return "", TimedOut
		}
	}
	if a.IsLoopback() {
		want := net.JoinHostPort(a.String(), strconv.Itoa(int(port)))
		for _, lb := range v.LBs {
			for _, l := range lb.Listeners {
				if l == want && (!lb.Internal || loopbackAny) {
					return want, Connect
				}
			}
		}
		if loopbackAny {
			return want, Connect
		}
		return "", Refused
	}
	if private(a) {
		return "", TimedOut
	}
	for _, lb := range v.LBs {
		for _, p := range lb.Private {
			if p == a.String() {
				return "", TimedOut
			}
		}
	}
	return "", Refused
}

// privateNets are addresses no client outside the VPC reaches: RFC 1918,
// the shared address space (RFC 6598), link-local, and TEST-NET-2, from
// which the lab's own load balancers take their VPC addresses
// (dataplane.LBAddresses).
var privateNets = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("fc00::/7"), netip.MustParsePrefix("fe80::/10"),
}

func private(a netip.Addr) bool {
	for _, p := range privateNets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ErrOutsideLab is a request to an address outside the lab.
var ErrOutsideLab = errors.New("refused by ccmlab: not one of the lab's addresses (the lab sends no packet off loopback)")

// Client is a podruntime.Network for podruntime.Curl: names resolve by
// View.Resolve, requests go by View.Route over real loopback
// connections.
type Client struct {
	View View
	// LoopbackAny: see View.Route.
	LoopbackAny bool
	// MaxBody bounds a response body kept; default 1 MiB.
	MaxBody int
	// DialTimeout bounds a connection's set-up; default 5s.
	DialTimeout time.Duration
}

// Lookup answers a query from outside: the public DNS's view.
func (c *Client) Lookup(_ *v1.Pod, name string, _ uint16) (dataplane.DNSAnswer, error) {
	addrs, ok := c.View.Resolve(name)
	if !ok {
		return dataplane.DNSAnswer{Name: name, NXDomain: true}, nil
	}
	return dataplane.DNSAnswer{Name: strings.TrimSuffix(name, "."), Addrs: addrs}, nil
}

// ServicesFor: the outside sees no Service.
func (c *Client) ServicesFor(string) []*v1.Service { return nil }

// DNSServer is the resolver the outside asks (the host's).
func (c *Client) DNSServer() string { return "127.0.0.53" }

// DefaultAnswer is never asked for outside a Pod.
func (c *Client) DefaultAnswer(dataplane.ServeRequest) dataplane.ServeResult {
	return dataplane.ServeResult{Status: http.StatusNotFound}
}

// FromPod sends r from outside (r.From is the empty Pod of
// podruntime.Curl) over a real loopback connection.
func (c *Client) FromPod(ctx context.Context, r dataplane.PodRequest) (dataplane.PodResponse, error) {
	host := r.Header.Get("Host")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	dial, verdict := c.View.Route(host, r.IP, r.Port, c.LoopbackAny)
	switch verdict {
	case TimedOut:
		return dataplane.PodResponse{}, &dataplane.ConnError{}
	case Refused:
		return dataplane.PodResponse{}, ErrOutsideLab
	}
	return c.do(ctx, dial, r)
}

func (c *Client) do(ctx context.Context, dial string, r dataplane.PodRequest) (dataplane.PodResponse, error) {
	maxBody := c.MaxBody
	if maxBody <= 0 {
		maxBody = 1 << 20
	}
	dt := c.DialTimeout
	if dt <= 0 {
		dt = 5 * time.Second
	}
	d := &net.Dialer{Timeout: dt}
	tr := &http.Transport{
		// No proxy from the environment: the request goes to dial or
		// nowhere.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			ap, err := netip.ParseAddrPort(dial)
			if err != nil || !ap.Addr().IsLoopback() {
				return nil, ErrOutsideLab
			}
			return d.DialContext(ctx, "tcp", dial)
		},
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var body io.Reader
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, "http://"+dial+r.URI, body)
	if err != nil {
		return dataplane.PodResponse{}, fmt.Errorf("bad request: %w", err)
	}
	for k, vs := range r.Header {
		if k == "Host" {
			continue
		}
		req.Header[k] = vs
	}
	req.Host = r.Header.Get("Host")
	resp, err := cl.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			if errors.Is(err, ErrOutsideLab) {
				return dataplane.PodResponse{}, ErrOutsideLab
			}
			// Nothing listens there any more.
			return dataplane.PodResponse{}, &dataplane.ConnError{Refused: true}
		}
		if ctx.Err() != nil {
			return dataplane.PodResponse{}, ctx.Err()
		}
		return dataplane.PodResponse{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxBody)))
	if err != nil && ctx.Err() != nil {
		return dataplane.PodResponse{}, ctx.Err()
	}
	h := resp.Header.Clone()
	return dataplane.PodResponse{Status: resp.StatusCode, Header: h, Body: b, Trace: dataplane.Trace{ID: h.Get(dataplane.TraceHeader)}}, nil
}
