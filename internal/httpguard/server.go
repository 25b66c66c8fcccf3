package httpguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"
)

// Never, as a timeout of ServerConfig, turns that bound off. Only
// WriteTimeout takes it: every server bounds how long a request may take to
// arrive and how long an idle connection stays.
const Never time.Duration = -1

// Defaults of ServerConfig.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds a whole request, headers and body. The
	// largest body a ccmlab server reads is MaxBody (64 KiB): 30 s is
	// about 17 kbit/s, slower than any link a class uses.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds each write of a response to the socket.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultIdleTimeout is longer than the 90 s after which Go's
	// http.Transport (the portal's proxy, the AWS SDK, the apiserver's
	// client) closes an idle connection itself: the client gives up
	// first, so it never sends a request on a connection the server is
	// closing at that moment (a POST there is not retried).
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxHeaderBytes: a request's headers are a bearer token,
	// a few cookies and a SigV4 signature; browsers send 2-8 KiB.
	DefaultMaxHeaderBytes = 32 << 10
)

// Timeouts bound what one connection may hold. Zero values take the
// defaults above.
type Timeouts struct {
	// ReadHeaderTimeout bounds reading a request's headers, from its
	// first byte; a new connection that sends nothing is closed after it.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, headers and body, from
	// its first byte: a client that trickles a body is cut after it. It
	// does not bound a handler or a response: net/http lifts the read
	// deadline once the body is read, and a websocket's hijacked
	// connection has none.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of a response to the socket, so a
	// client that stops reading is cut after it, however long the
	// response. It does not bound how long a handler works before it
	// writes (a cloud call held in step mode, an exercise reset) or how
	// long a stream lasts between writes (server-sent events, `kubectl
	// logs -f`): http.Server's own WriteTimeout would, so it stays unset.
	// A hijacked connection (a websocket) bounds its own writes. Never
	// turns it off.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no next
	// request.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (431 past it).
	MaxHeaderBytes int
}

// ServerConfig is one HTTP server of the lab.
type ServerConfig struct {
	Handler http.Handler
	Timeouts

	// Passed on to http.Server as they are.
	BaseContext func(net.Listener) context.Context
	ConnState   func(net.Conn, http.ConnState)
	ErrorLog    *log.Logger
}

func (c *Timeouts) defaults() {
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&c.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{&c.ReadTimeout, DefaultReadTimeout},
		{&c.WriteTimeout, DefaultWriteTimeout},
		{&c.IdleTimeout, DefaultIdleTimeout},
	} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
}

// Validate checks t (after defaults: zero values are taken as the
// defaults).
func (t Timeouts) Validate() error {
	t.defaults()
	return t.validate()
}

func (c *Timeouts) validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"ReadHeaderTimeout", c.ReadHeaderTimeout},
		{"ReadTimeout", c.ReadTimeout},
		{"IdleTimeout", c.IdleTimeout},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive (0 takes the default), got %v", d.name, d.v))
		}
	}
	if c.WriteTimeout <= 0 && c.WriteTimeout != Never {
		errs = append(errs, fmt.Errorf("WriteTimeout must be positive (0 takes the default, Never turns it off), got %v", c.WriteTimeout))
	}
	if c.ReadHeaderTimeout > 0 && c.ReadTimeout > 0 && c.ReadHeaderTimeout > c.ReadTimeout {
		errs = append(errs, fmt.Errorf("ReadHeaderTimeout %v is longer than ReadTimeout %v, which covers the headers too", c.ReadHeaderTimeout, c.ReadTimeout))
	}
	if c.MaxHeaderBytes < 1<<10 || c.MaxHeaderBytes > 1<<20 {
		errs = append(errs, fmt.Errorf("MaxHeaderBytes must be between 1 KiB and 1 MiB (0 takes the default), got %d", c.MaxHeaderBytes))
	}
	return errors.Join(errs...)
}

func (c *ServerConfig) validate() error {
	var errs []error
	if c.Handler == nil {
		errs = append(errs, errors.New("a handler is required"))
	}
	errs = append(errs, c.Timeouts.validate())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("httpguard: server config: %w", err)
	}
	return nil
}

// NewServer builds the http.Server every ccmlab server runs on, with the
// bounds of cfg.
func NewServer(cfg ServerConfig) (*http.Server, error) {
	cfg.Timeouts.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	h := cfg.Handler
	connState := cfg.ConnState
	if cfg.WriteTimeout != Never {
		h = writeDeadlines(h, cfg.WriteTimeout)
		connState = func(c net.Conn, st http.ConnState) {
			if st == http.StateIdle {
				// The last response's deadline would otherwise still
				// stand when net/http itself answers a later
				// malformed request on this connection.
				_ = c.SetWriteDeadline(time.Time{})
			}
			if cfg.ConnState != nil {
				cfg.ConnState(c, st)
			}
		}
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		BaseContext:       cfg.BaseContext,
		ConnState:         connState,
		ErrorLog:          cfg.ErrorLog,
	}, nil
}

// writeDeadlines gives every write of a response d to reach the socket.
func writeDeadlines(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}
		next.ServeHTTP(dw, r)
		// net/http sends what is still buffered after the handler
		// returns; that write gets its own d.
		dw.arm()
	})
}

// deadlineWriter sets the connection's write deadline before each write
// or flush: what it bounds is a write the client does not take, not the
// time the handler needs between writes.
type deadlineWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	d     time.Duration
	owned bool // the handler set a deadline of its own, or hijacked
}

func (w *deadlineWriter) arm() {
	if !w.owned {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	}
}

// WriteHeader may write at once (a 1xx).
func (w *deadlineWriter) WriteHeader(code int) {
	w.arm()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(b)
}

// Flush keeps handlers that assert http.Flusher streaming.
func (w *deadlineWriter) Flush() { _ = w.FlushError() }

func (w *deadlineWriter) FlushError() error {
	w.arm()
	return w.rc.Flush()
}

// SetWriteDeadline lets a handler take the deadline over (through
// http.ResponseController); its own then stands.
func (w *deadlineWriter) SetWriteDeadline(t time.Time) error {
	w.owned = true
	return w.rc.SetWriteDeadline(t)
}

// Hijack hands the connection over (net/http clears its deadlines): the
// hijacker, a websocket, bounds its own writes from then on, and no
// deadline of this writer may land on it afterwards.
func (w *deadlineWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.owned = true
	return w.rc.Hijack()
}

// Unwrap lets http.ResponseController and websocket libraries reach the
// connection (Hijack, SetReadDeadline).
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// BoundHijacked wraps w so that a connection hijacked through it (a
// websocket the portal proxies) is closed when its client has sent
// nothing for idle, and each write to it must end within write. The
// connection has no CloseWrite: when the far side ends, the portal's
// httputil.ReverseProxy then closes the client's connection at once,
// rather than half-closing it and waiting, unbounded, for a client that
// may never end its own side.
func BoundHijacked(w http.ResponseWriter, idle, write time.Duration) http.ResponseWriter {
	return &hijackBounder{ResponseWriter: w, idle: idle, write: write}
}

type hijackBounder struct {
	http.ResponseWriter
	idle, write time.Duration
}

func (h *hijackBounder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &boundedConn{Conn: c, idle: h.idle, write: h.write}, brw, nil
}

func (h *hijackBounder) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// boundedConn moves its deadlines on with each read and write.
type boundedConn struct {
	net.Conn
	idle, write time.Duration
}

func (c *boundedConn) Read(b []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *boundedConn) Write(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.write)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
