package lowports

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/lab/dataplane/outside"
)

// Config configures the low-port mode.
type Config struct {
	// Source is the lab's load balancers now (required).
	Source func(context.Context) (outside.View, error)
	// Pool is where load balancers' addresses come from; default
	// 127.0.1.0/24 (its .1 to .254). It must lie in 127.0.0.0/8.
	Pool netip.Prefix
	// DNS is the DNS server's address; default 127.0.2.53:53.
	DNS netip.AddrPort
	// Interval between looks at Source; default 1s.
	Interval time.Duration
	// MaxConns bounds the connections carried at once; default 256.
	MaxConns int
	Logger   *slog.Logger
	Clock    clock.WithTicker
}

var loopback8 = netip.MustParsePrefix("127.0.0.0/8")

func (c *Config) validate() error {
	if c.Source == nil {
		return errors.New("lowports: a Source is required")
	}
	if !c.Pool.IsValid() {
		c.Pool = netip.MustParsePrefix("127.0.1.0/24")
	}
	if !c.DNS.IsValid() {
		c.DNS = netip.MustParseAddrPort("127.0.2.53:53")
	}
	c.Pool = c.Pool.Masked()
	if !c.Pool.Addr().Is4() || !loopback8.Contains(c.Pool.Addr()) || c.Pool.Bits() < 8 || c.Pool.Bits() > 30 {
		return fmt.Errorf("lowports: pool %s must be a prefix inside 127.0.0.0/8 of /8 to /30", c.Pool)
	}
	if !loopback8.Contains(c.DNS.Addr()) {
		return fmt.Errorf("lowports: the DNS address %s must be in 127.0.0.0/8", c.DNS)
	}
	if c.Pool.Contains(c.DNS.Addr()) {
		return fmt.Errorf("lowports: the DNS address %s is inside the pool %s", c.DNS, c.Pool)
	}
	c.Interval = cmp.Or(c.Interval, time.Second)
	c.MaxConns = cmp.Or(c.MaxConns, 256)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return nil
}

// poolSize bounds the load balancers that get an address: the pool's
// addresses but its first (network) and last (broadcast-like), at most
// 1,024.
func (c *Config) poolSize() int {
	n := 1 << (32 - c.Pool.Bits())
	return min(n-2, 1024)
}

// Mode runs the low-port mode.
type Mode struct {
	cfg   Config
	conns chan struct{}

	mu    sync.Mutex
	addrs map[string]netip.Addr // load balancer -> its address
	open  map[netip.AddrPort]*forward
	view  outside.View
}

type forward struct {
	ln net.Listener
	to string // the data plane's listener
}

// New checks cfg; Check says whether this machine allows the mode.
func New(cfg Config) (*Mode, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Mode{cfg: cfg, conns: make(chan struct{}, cfg.MaxConns), addrs: map[string]netip.Addr{}, open: map[netip.AddrPort]*forward{}}, nil
}

// ErrNoLowPorts: the process may not bind ports below 1024.
var ErrNoLowPorts = errors.New("--lb-addresses binds ports below 1024 (80, 443, 53), which needs root, CAP_NET_BIND_SERVICE (sudo setcap cap_net_bind_service=+ep ./bin/ccmlab) or a container")

// Check says whether the mode can run here: the platform (all of
// 127/8 on loopback) and the right to bind low ports, tried on the DNS
// address itself.
func (m *Mode) Check() error {
	if err := supported(); err != nil {
		return err
	}
	pc, err := net.ListenPacket("udp4", m.cfg.DNS.String())
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		return ErrNoLowPorts
	}
	if err != nil {
		return fmt.Errorf("--lb-addresses: the DNS address %s: %w", m.cfg.DNS, err)
	}
	return pc.Close()
}

// DNS is the address of the mode's DNS server.
func (m *Mode) DNS() netip.AddrPort { return m.cfg.DNS }

// Run serves DNS and keeps one address per internet-facing load
// balancer until ctx ends.
func (m *Mode) Run(ctx context.Context) error {
	pc, err := net.ListenPacket("udp4", m.cfg.DNS.String())
	if err != nil {
		if errors.Is(err, syscall.EACCES) {
			return ErrNoLowPorts
		}
		return fmt.Errorf("lowports: DNS on %s: %w", m.cfg.DNS, err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.serveDNS(pc) }()
	defer func() {
		_ = pc.Close()
		m.mu.Lock()
		for k, f := range m.open {
			_ = f.ln.Close()
			delete(m.open, k)
		}
		m.mu.Unlock()
		wg.Wait()
	}()
	tick := m.cfg.Clock.NewTicker(m.cfg.Interval)
	defer tick.Stop()
	for {
		if v, err := m.cfg.Source(ctx); err != nil {
			m.cfg.Logger.Debug("lowports: no view of the lab", "err", err)
		} else {
			m.sync(v, &wg)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		}
	}
}

// sync gives each internet-facing load balancer with a listener an
// address (kept while it exists) and opens its ports; addresses and
// ports of load balancers gone are freed.
func (m *Mode) sync(v outside.View, wg *sync.WaitGroup) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.view = v
	want := map[netip.AddrPort]string{}
	seen := map[string]bool{}
	for _, lb := range v.LBs {
		if lb.Internal || len(lb.Listeners) == 0 {
			continue
		}
		seen[lb.Name] = true
		a, ok := m.addrs[lb.Name]
		if !ok {
			if a, ok = m.allocate(); !ok {
				m.cfg.Logger.Warn("lowports: the address pool is used up; this load balancer gets no address of its own", "lb", lb.Name, "pool", m.cfg.Pool)
				continue
			}
			m.addrs[lb.Name] = a
		}
		for port, to := range lb.Listeners {
			want[netip.AddrPortFrom(a, uint16(port))] = to
		}
	}
	for name := range m.addrs {
		if !seen[name] {
			delete(m.addrs, name)
		}
	}
	for ap, f := range m.open {
		if to, ok := want[ap]; !ok || to != f.to {
			_ = f.ln.Close()
			delete(m.open, ap)
		}
	}
	for ap, to := range want {
		if _, ok := m.open[ap]; ok {
			continue
		}
		ln, err := net.Listen("tcp4", ap.String())
		if err != nil {
			m.cfg.Logger.Warn("lowports: cannot open a load balancer's port", "address", ap, "err", err)
			continue
		}
		f := &forward{ln: ln, to: to}
		m.open[ap] = f
		wg.Add(1)
		go func() { defer wg.Done(); m.accept(f) }()
	}
}

// allocate is the lowest free address of the pool (under m.mu).
func (m *Mode) allocate() (netip.Addr, bool) {
	used := map[netip.Addr]bool{}
	for _, a := range m.addrs {
		used[a] = true
	}
	a := m.cfg.Pool.Addr().Next()
	for range m.cfg.poolSize() {
		if !used[a] {
			return a, true
		}
		a = a.Next()
	}
	return netip.Addr{}, false
}

// Addresses lists each load balancer's address.
func (m *Mode) Addresses() map[string]netip.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]netip.Addr, len(m.addrs))
	for k, v := range m.addrs {
		out[k] = v
	}
	return out
}

// accept carries each connection to f's data-plane listener.
func (m *Mode) accept(f *forward) {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		select {
		case m.conns <- struct{}{}:
		default:
			// At the bound: refuse rather than queue.
			_ = c.Close()
			continue
		}
		go func() {
			defer func() { <-m.conns }()
			carry(c, f.to)
		}()
	}
}

// carry copies bytes both ways between c and a new connection to to
// (always a loopback address: the data plane's listener).
func carry(c net.Conn, to string) {
	defer c.Close()
	ap, err := netip.ParseAddrPort(to)
	if err != nil || !ap.Addr().IsLoopback() {
		return
	}
	up, err := net.DialTimeout("tcp", to, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// resolve answers name as the mode's DNS does: an internet-facing load
// balancer's own address; an internal one's name is known but has no
// address. AWS's public DNS gives it the private addresses of its nodes
// (docs/architecture.md), but here those would send the host's client
// to its own network, off loopback: none is the lab's safe answer (the
// client says it cannot resolve the name; ccmlab curl shows AWS's
// behaviour, the name resolving and the connection timing out).
func (m *Mode) resolve(name string) ([]netip.Addr, bool) {
	m.mu.Lock()
	v, addrs := m.view, m.addrs
	defer m.mu.Unlock()
	for _, lb := range v.LBs {
		if lb.DNSName == "" || lb.DNSName != name {
			continue
		}
		if !lb.Internal {
			a, ok := addrs[lb.Name]
			if !ok {
				return nil, true // known, not yet served: no address
			}
			return []netip.Addr{a}, true
		}
		return nil, true
	}
	return nil, false
}

// Line is what the lab prints about the mode.
func (m *Mode) Line() string {
	return fmt.Sprintf("  load-balancer addresses: each internet-facing load balancer on its own address in %s, on its own ports; DNS for their names on %s (nameserver %s in a resolv.conf)",
		m.cfg.Pool, m.cfg.DNS, m.cfg.DNS.Addr())
}
