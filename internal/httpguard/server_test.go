package httpguard

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// guard bounds every wait below; it turns a hang into a failure and is
// never what a test asserts.
const guard = 15 * time.Second

func TestServerConfigValidate(t *testing.T) {
	ok := http.NotFoundHandler()
	for _, tc := range []struct {
		name string
		cfg  ServerConfig
		want string // "" = valid
	}{
		{"defaults", ServerConfig{Handler: ok}, ""},
		{"no write timeout", ServerConfig{Handler: ok, Timeouts: Timeouts{WriteTimeout: Never}}, ""},
		{"no handler", ServerConfig{}, "handler is required"},
		{"negative read", ServerConfig{Handler: ok, Timeouts: Timeouts{ReadTimeout: -time.Second}}, "ReadTimeout must be positive"},
		{"never idle", ServerConfig{Handler: ok, Timeouts: Timeouts{IdleTimeout: Never}}, "IdleTimeout must be positive"},
		{"never header", ServerConfig{Handler: ok, Timeouts: Timeouts{ReadHeaderTimeout: Never}}, "ReadHeaderTimeout must be positive"},
		{"negative write", ServerConfig{Handler: ok, Timeouts: Timeouts{WriteTimeout: -2}}, "WriteTimeout must be positive"},
		{"header longer than request", ServerConfig{Handler: ok, Timeouts: Timeouts{ReadHeaderTimeout: time.Minute, ReadTimeout: time.Second}}, "covers the headers too"},
		{"tiny headers", ServerConfig{Handler: ok, Timeouts: Timeouts{MaxHeaderBytes: 100}}, "MaxHeaderBytes"},
		{"huge headers", ServerConfig{Handler: ok, Timeouts: Timeouts{MaxHeaderBytes: 2 << 20}}, "MaxHeaderBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := NewServer(tc.cfg)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
					t.Fatalf("a bound is unset: %+v", srv)
				}
				if srv.WriteTimeout != 0 {
					t.Fatalf("http.Server.WriteTimeout = %v: it would cut long handlers and streams", srv.WriteTimeout)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// serve runs NewServer(cfg) on a loopback port until the test ends.
func serve(t *testing.T, cfg ServerConfig) string {
	t.Helper()
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return ln.Addr().String()
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedByServer reads c until the server closes it (EOF or reset) and
// returns what it read; a connection still open after guard fails t.
func closedByServer(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(guard))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open (read so far %q)", b)
	}
	return string(b)
}

// A client that sends its headers and then trickles, or stops sending,
// its body is cut after ReadTimeout; the handler sees the read fail.
func TestSlowBodyCut(t *testing.T) {
	bodyErr := make(chan error, 1)
	addr := serve(t, ServerConfig{
		Timeouts: Timeouts{ReadHeaderTimeout: 100 * time.Millisecond, ReadTimeout: 300 * time.Millisecond},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var v map[string]any
			e := DecodeJSON(w, r, &v, DecodeOptions{})
			if e == nil {
				bodyErr <- nil
				return
			}
			bodyErr <- e
			WriteError(w, e.Code, e.Msg)
		}),
	})
	c := dialRaw(t, addr)
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"a\":"); err != nil {
		t.Fatal(err)
	}
	closedByServer(t, c)
	select {
	case err := <-bodyErr:
		if err == nil || !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("the handler's body read ended with %v, want a timeout", err)
		}
	case <-time.After(guard):
		t.Fatal("the handler never returned")
	}
}

// A new connection that sends nothing is closed after ReadHeaderTimeout,
// a kept-alive one that sends no next request after IdleTimeout.
func TestIdleConnectionsClosed(t *testing.T) {
	cfg := ServerConfig{
		Timeouts: Timeouts{ReadHeaderTimeout: 100 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, IdleTimeout: 300 * time.Millisecond},
		Handler:  http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }),
	}
	addr := serve(t, cfg)
	t.Run("silent from the start", func(t *testing.T) {
		c := dialRaw(t, addr)
		if got := closedByServer(t, c); got != "" {
			t.Fatalf("read %q from a connection that asked nothing", got)
		}
	})
	t.Run("idle after a request", func(t *testing.T) {
		c := dialRaw(t, addr)
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(res.Body); res.StatusCode != 200 || string(b) != "ok" || res.Close {
			t.Fatalf("%d %q close=%v: want a kept-alive 200", res.StatusCode, b, res.Close)
		}
		_ = c.SetReadDeadline(time.Now().Add(guard))
		n, err := br.Read(make([]byte, 1))
		var ne net.Error
		if n != 0 || errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("read %d bytes, %v: want the server to close the idle connection", n, err)
		}
	})
}

// WriteTimeout bounds each write, not the response: a handler that takes
// longer than it between writes streams on, while a client that stops
// reading is cut.
func TestWriteDeadlinePerWrite(t *testing.T) {
	const wt = 200 * time.Millisecond
	t.Run("slow handler streams on", func(t *testing.T) {
		addr := serve(t, ServerConfig{Timeouts: Timeouts{WriteTimeout: wt}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for i := range 3 {
				// The handler's own work (a held cloud call, a quiet
				// log) outlasts the write timeout between writes.
				time.Sleep(2 * wt)
				_, _ = io.WriteString(w, strings.Repeat("x", i+1))
				w.(http.Flusher).Flush()
			}
		})})
		res, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil || string(b) != "xxxxxx" {
			t.Fatalf("read %q, %v: want the whole stream", b, err)
		}
	})
	t.Run("client that stops reading is cut", func(t *testing.T) {
		writeErr := make(chan error, 1)
		addr := serve(t, ServerConfig{Timeouts: Timeouts{WriteTimeout: wt}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			chunk := make([]byte, 1<<20)
			for {
				if _, err := w.Write(chunk); err != nil {
					writeErr <- err
					return
				}
			}
		})})
		c := dialRaw(t, addr)
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		// The client reads nothing.
		select {
		case err := <-writeErr:
			if !strings.Contains(err.Error(), "timeout") {
				t.Fatalf("the write failed with %v, want a timeout", err)
			}
		case <-time.After(guard):
			t.Fatal("the server is still writing to a client that reads nothing")
		}
	})
	t.Run("Never leaves writes unbounded", func(t *testing.T) {
		h := &http.ServeMux{}
		srv, err := NewServer(ServerConfig{Timeouts: Timeouts{WriteTimeout: Never}, Handler: h})
		if err != nil {
			t.Fatal(err)
		}
		if srv.Handler != http.Handler(h) || srv.ConnState != nil {
			t.Fatal("Never still wraps the handler")
		}
	})
}

// A websocket proxied through BoundHijacked (as the portal proxies a
// lab's /ws) is released when its client falls silent for the idle bound,
// and at once when the far side ends: no stalled client holds the two
// descriptors of a proxied connection past either.
func TestBoundHijackedProxy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		idle       time.Duration
		backendEnd bool // the backend closes right after the upgrade
	}{
		{"silent client, silent backend: idle bound", 200 * time.Millisecond, false},
		{"backend ends: released at once", 10 * guard, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backendGone := make(chan struct{})
			backend := serve(t, ServerConfig{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(backendGone)
				c, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				if tc.backendEnd {
					_ = c.CloseNow()
					return
				}
				// Wait until the proxy drops its side.
				_, _, _ = c.Read(context.Background())
			})})
			target, _ := url.Parse("http://" + backend)
			rp := httputil.NewSingleHostReverseProxy(target)
			proxyDone := make(chan struct{}, 1)
			proxy := serve(t, ServerConfig{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rp.ServeHTTP(BoundHijacked(w, tc.idle, time.Second), r)
				proxyDone <- struct{}{}
			})})
			c := dialRaw(t, proxy)
			_ = c.SetDeadline(time.Now().Add(guard))
			if _, err := io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: "+proxy+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
				"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("upgrade through the proxy: %v %v", res, err)
			}
			// The client never reads or writes again.
			select {
			case <-proxyDone:
			case <-time.After(guard):
				t.Fatal("the proxy still holds the connection")
			}
			select {
			case <-backendGone:
			case <-time.After(guard):
				t.Fatal("the backend's connection is still open")
			}
			closedByServer(t, c)
		})
	}
}
