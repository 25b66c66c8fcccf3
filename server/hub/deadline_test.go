package hub

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

// Short keepalives, so that the tests below see several rounds: the real
// clock, since a hijacked connection's deadlines are wall-clock ones.
const (
	shortPing = 100 * time.Millisecond
	shortPong = 200 * time.Millisecond
)

// serveHub runs a hub with short keepalives behind srv on loopback.
func serveHub(t *testing.T, srv *http.Server) (*Hub, string) {
	t.Helper()
	h, err := New(Config{PingInterval: shortPing, PongTimeout: shortPong, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv.Handler = h
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		_ = h.Close(ctx)
		_ = srv.Close()
		<-done
	})
	return h, ln.Addr().String()
}

// The HTTP server's read and write deadlines end with the upgrade (net/http
// clears them when the connection is hijacked): a client that answers
// pings stays connected well past them, and the hub's own keepalives are
// what bound it.
func TestHubOutlivesServerDeadlines(t *testing.T) {
	const d = 50 * time.Millisecond
	guarded, err := httpguard.NewServer(httpguard.ServerConfig{Handler: http.NotFoundHandler(), Timeouts: httpguard.Timeouts{ReadHeaderTimeout: d, ReadTimeout: d, WriteTimeout: d, IdleTimeout: d}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		srv  *http.Server
	}{
		{"httpguard.NewServer", guarded},
		{"http.Server with ReadTimeout and WriteTimeout", &http.Server{ReadTimeout: d, WriteTimeout: d}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, addr := serveHub(t, tc.srv)
			c := dial(t, "ws://"+addr+"/ws", nil)
			msgs, errc := make(chan Message, 16), make(chan error, 1)
			go func() {
				for {
					m, err := readMsg(c)
					if err != nil {
						errc <- err
						return
					}
					msgs <- m
				}
			}()
			waitFor(t, "subscribed", func() bool { return h.Stats().Subscribers == 1 })
			s := h.onlySub(t)
			// Three pongs: past every deadline of the server, several
			// times over.
			waitFor(t, "three pongs", func() bool { return s.pongs.Load() >= 3 })
			seq := mustPublish(t, h, TypeTrace, "still here")
			for {
				select {
				case m := <-msgs:
					if m.Seq != seq {
						continue
					}
				case err := <-errc:
					t.Fatalf("connection ended: %v", err)
				case <-time.After(guard):
					t.Fatal("message not delivered")
				}
				break
			}
		})
	}
}

// A client that completes the upgrade and then neither reads nor writes
// (no pong) is dropped after PingInterval + PongTimeout, and its socket is
// closed: it holds nothing past the deadline.
func TestStalledClientFreed(t *testing.T) {
	srv, err := httpguard.NewServer(httpguard.ServerConfig{Handler: http.NotFoundHandler()})
	if err != nil {
		t.Fatal(err)
	}
	h, addr := serveHub(t, srv)
	const stalled = 20
	conns := make([]net.Conn, stalled)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetDeadline(time.Now().Add(guard))
		if _, err := io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: "+addr+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade: %v %v", res, err)
		}
		conns[i] = c
	}
	waitFor(t, "every stalled client subscribed", func() bool { return h.Stats().Subscribers == stalled })
	// From here the clients read nothing and answer nothing.
	waitFor(t, "every stalled client dropped", func() bool { return h.Stats().Connections == 0 })
	for i, c := range conns {
		// What the hub sent (snapshot, pings) is still in the socket;
		// past it, the server's close.
		_ = c.SetReadDeadline(time.Now().Add(guard))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("client %d: the server kept its end open", i)
		}
		if err != nil && !strings.Contains(err.Error(), "reset") {
			t.Fatalf("client %d: %v", i, err)
		}
	}
	// A client that answers is not caught by the same deadline.
	c := dial(t, "ws://"+addr+"/ws", &websocket.DialOptions{})
	go func() {
		for {
			if _, err := readMsg(c); err != nil {
				return
			}
		}
	}()
	waitFor(t, "a live client subscribed", func() bool { return h.Stats().Subscribers == 1 })
	s := h.onlySub(t)
	waitFor(t, "the live client answers three pings", func() bool { return s.pongs.Load() >= 3 })
}
