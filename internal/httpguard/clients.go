package httpguard

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// ClientKey names the client a connection comes from: its IP address,
// or for IPv6 its /64, the block one host is usually given (so a client
// cannot step around a limit by changing the low bits of its address).
// It never reads X-Forwarded-For: a client writes that header itself.
func ClientKey(remoteAddr string) string {
	host := remoteAddr
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// ClientConnsConfig caps the connections one client holds open at once.
type ClientConnsConfig struct {
	// Max is the cap; past it a new connection is answered 429 and
	// closed. Default DefaultConnsPerClient.
	Max int
	// Logger hears of a client reaching the cap (once a minute at most
	// per client). Default slog.Default().
	Logger *slog.Logger
	// Clock times those log lines. Default real.
	Clock clock.PassiveClock
}

// DefaultConnsPerClient fits a class of 30 behind one NAT address (each
// student: a websocket and the browser's six connections) and bounds one
// client's descriptors at the portal to 2 x 256 (its own and the lab's).
const DefaultConnsPerClient = 256

// maxRefusing bounds the refusals being delivered at once: past it a
// refused connection is closed without an answer.
const maxRefusing = 64

// refuseLinger is how long a refused connection is read (and discarded)
// after its 429, so that its request, unread, does not turn the close
// into a reset that destroys the answer before the client reads it.
const refuseLinger = 2 * time.Second

func (c *ClientConnsConfig) defaults() {
	if c.Max == 0 {
		c.Max = DefaultConnsPerClient
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
}

func (c *ClientConnsConfig) validate() error {
	if c.Max < 1 || c.Max > 65535 {
		return fmt.Errorf("connections per client must be between 1 and 65535, got %d", c.Max)
	}
	return nil
}

// ClientConns is a listener that counts each client's open connections
// and refuses one past the cap at once, before any request is read, so a
// refused connection holds nothing.
type ClientConns struct {
	net.Listener
	cfg      ClientConnsConfig
	refusing chan struct{}

	mu      sync.Mutex
	open    map[string]int
	warned  map[string]time.Time
	refused uint64
}

// LimitClientConns wraps ln.
func LimitClientConns(ln net.Listener, cfg ClientConnsConfig) (*ClientConns, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &ClientConns{Listener: ln, cfg: cfg, refusing: make(chan struct{}, maxRefusing),
		open: map[string]int{}, warned: map[string]time.Time{}}, nil
}

// Accept returns the next connection within its client's cap.
func (l *ClientConns) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := ClientKey(c.RemoteAddr().String())
		l.mu.Lock()
		if l.open[key] >= l.cfg.Max {
			l.refused++
			now := l.cfg.Clock.Now()
			warn := now.Sub(l.warned[key]) >= time.Minute
			if warn {
				l.warned[key] = now
			}
			l.mu.Unlock()
			if warn {
				l.cfg.Logger.Warn("a client reached its cap of open connections; refusing more", "client", key, "cap", l.cfg.Max)
			}
			l.refuse(c, key)
			continue
		}
		l.open[key]++
		l.mu.Unlock()
		return &countedConn{Conn: c, l: l, key: key}, nil
	}
}

// Open is how many connections key holds (ClientKey of its address).
func (l *ClientConns) Open(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[key]
}

// Refused counts the connections refused so far.
func (l *ClientConns) Refused() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

func (l *ClientConns) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
		delete(l.warned, key)
	}
}

// refuse answers 429 on the raw connection and closes it. The answer is
// written before the request is read: HTTP lets a server answer early,
// and reading the request would mean holding the connection for it.
func (l *ClientConns) refuse(c net.Conn, key string) {
	select {
	case l.refusing <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		body := fmt.Sprintf(`{"error":"too many open connections from %s: at most %d at once; close other tabs or wait for their requests to end"}`+"\n", key, l.cfg.Max)
		resp := "HTTP/1.1 429 Too Many Requests\r\n" +
			"Content-Type: application/json\r\n" +
			"Cache-Control: no-store\r\n" +
			"Retry-After: 5\r\n" +
			"Connection: close\r\n" +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		_ = c.SetDeadline(time.Now().Add(refuseLinger))
		if _, err := c.Write([]byte(resp)); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
}

// countedConn gives its slot back once, on the first Close.
type countedConn struct {
	net.Conn
	l    *ClientConns
	key  string
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key) })
	return err
}

// CloseWrite keeps net/http's lingering close (FIN, then read what is
// left) working through the wrapper.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// SignInConfig bounds failed sign-ins (a token that opens nothing) per
// client: Burst of them at once, then one more each Window/Burst.
type SignInConfig struct {
	// Burst is how many failures a client may make before it is refused.
	// Default 10.
	Burst int
	// Window is the time after which Burst failures are forgotten.
	// Default 1 minute.
	Window time.Duration
	// MaxClients bounds the clients remembered; past it, the clients not
	// remembered share one budget. Default 10,000.
	MaxClients int
	// Clock drives the budget. Default real.
	Clock clock.PassiveClock
}

func (c *SignInConfig) defaults() {
	if c.Burst == 0 {
		c.Burst = 10
	}
	if c.Window == 0 {
		c.Window = time.Minute
	}
	if c.MaxClients == 0 {
		c.MaxClients = 10_000
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
}

func (c *SignInConfig) validate() error {
	var errs []error
	if c.Burst < 1 || c.Burst > 1000 {
		errs = append(errs, fmt.Errorf("failed sign-ins allowed must be between 1 and 1000, got %d", c.Burst))
	}
	if c.Window < time.Second || c.Window > 24*time.Hour {
		errs = append(errs, fmt.Errorf("the sign-in window must be between 1s and 24h, got %v", c.Window))
	}
	if c.MaxClients < 1 {
		errs = append(errs, fmt.Errorf("MaxClients must be positive, got %d", c.MaxClients))
	}
	return errors.Join(errs...)
}

// SignIns rate-limits failed sign-ins per client (ClientKey). A token is
// checked only while its client has budget left, so past the budget a
// guesser learns nothing, not even whether a guess was right.
type SignIns struct {
	cfg   SignInConfig
	every rate.Limit

	mu       sync.Mutex
	clients  map[string]*signInClient
	overflow *signInClient
}

type signInClient struct {
	lim *rate.Limiter // one token per failure the client may still make
	// inflight counts sign-ins begun and not done: each may yet fail, so
	// each holds a token's worth of budget meanwhile.
	inflight int
}

// NewSignIns checks cfg and builds the limiter.
func NewSignIns(cfg SignInConfig) (*SignIns, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("httpguard: sign-ins: %w", err)
	}
	s := &SignIns{cfg: cfg, every: rate.Every(cfg.Window / time.Duration(cfg.Burst)), clients: map[string]*signInClient{}}
	s.overflow = s.newClient()
	return s, nil
}

func (s *SignIns) newClient() *signInClient {
	return &signInClient{lim: rate.NewLimiter(s.every, s.cfg.Burst)}
}

// SignIn is one sign-in under way. Done must be called once.
type SignIn struct {
	s *SignIns
	c *signInClient
}

// Begin starts a sign-in of r's client. With no budget left it returns
// nil and how long until there is some. Budget is held from Begin to
// Done, so that guesses sent at once cannot all pass a check that counts
// them only afterwards.
func (s *SignIns) Begin(r *http.Request) (*SignIn, time.Duration) {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.client(ClientKey(r.RemoteAddr), now)
	need := float64(c.inflight + 1)
	if have := c.lim.TokensAt(now); have < need {
		return nil, time.Duration((need - have) / float64(s.every) * float64(time.Second))
	}
	c.inflight++
	return &SignIn{s: s, c: c}, 0
}

// Done ends the sign-in; a failed one (a token that opened nothing)
// spends budget, a right token costs nothing.
func (si *SignIn) Done(ok bool) {
	s := si.s
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	si.c.inflight--
	if !ok {
		si.c.lim.AllowN(now, 1)
	}
}

// client is key's budget; s.mu is held.
func (s *SignIns) client(key string, now time.Time) *signInClient {
	if c, ok := s.clients[key]; ok {
		return c
	}
	if len(s.clients) >= s.cfg.MaxClients {
		// Forget the clients whose budget is whole again.
		for k, c := range s.clients {
			if c.inflight == 0 && c.lim.TokensAt(now) >= float64(s.cfg.Burst) {
				delete(s.clients, k)
			}
		}
		if len(s.clients) >= s.cfg.MaxClients {
			return s.overflow
		}
	}
	c := s.newClient()
	s.clients[key] = c
	return c
}

// TooManyMessage is the refusal's text for a wait of d; RetryAfter its
// header value, in whole seconds, rounded up.
func TooManyMessage(d time.Duration) string {
	return fmt.Sprintf("too many failed sign-ins; try again in %d s", RetryAfter(d))
}

// RetryAfter is d in whole seconds, at least 1.
func RetryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// WriteTooMany answers 429 for a client out of sign-in budget for d.
func WriteTooMany(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(RetryAfter(d)))
	WriteError(w, http.StatusTooManyRequests, TooManyMessage(d))
}
