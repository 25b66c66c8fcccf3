package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ccmlab/ccmlab/internal/testutil"
)

// guard bounds every wait in the tests. It only turns a hang into a
// failure; no test asserts on how long anything takes.
const guard = 15 * time.Second

func testLogger() *slog.Logger {
	if os.Getenv("HUB_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type testServer struct {
	hub *Hub
	srv *httptest.Server
	url string // ws:// URL of the hub
}

// newTestServer starts a hub behind an httptest server. wrap, if not nil,
// wraps the server's listener.
func newTestServer(t testing.TB, cfg Config, wrap func(net.Listener) net.Listener) *testServer {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewUnstartedServer(h)
	if wrap != nil {
		srv.Listener = wrap(srv.Listener)
	}
	srv.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("hub Close in cleanup: %v", err)
		}
		srv.Close()
	})
	return &testServer{hub: h, srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"}
}

func (ts *testServer) wsURL(query string) string {
	if query == "" {
		return ts.url
	}
	return ts.url + "?" + query
}

func dial(t testing.TB, url string, opts *websocket.DialOptions) *websocket.Conn {
	t.Helper()
	c, err := dialErr(url, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

func dialErr(url string, opts *websocket.DialOptions) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		_ = c.CloseNow()
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	c.SetReadLimit(1 << 20)
	return c, nil
}

// readRaw reads one text message.
func readRaw(c *websocket.Conn) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, fmt.Errorf("message type %v, want text", typ)
	}
	return b, nil
}

func readMsg(c *websocket.Conn) (Message, error) {
	b, err := readRaw(c)
	if err != nil {
		return Message{}, err
	}
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return Message{}, fmt.Errorf("decode %q: %w", b, err)
	}
	return m, nil
}

func mustRead(t testing.TB, c *websocket.Conn) Message {
	t.Helper()
	m, err := readMsg(c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return m
}

// expectSeqs reads messages and checks they have exactly the given seqs.
func expectSeqs(t testing.TB, c *websocket.Conn, from, to uint64) {
	t.Helper()
	for want := from; want <= to; want++ {
		m := mustRead(t, c)
		if m.Seq != want || m.Type == TypeSnapshot {
			t.Fatalf("got %s seq %d, want live seq %d", m.Type, m.Seq, want)
		}
	}
}

// waitFor is testutil.EventuallyTrue with the package's guard as timeout.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.EventuallyTrue(t, guard, what, cond)
}

func mustPublish(t testing.TB, h *Hub, typ string, data any) uint64 {
	t.Helper()
	seq, err := h.Publish(typ, data)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return seq
}

// onlySub returns the single connection the hub serves.
func (h *Hub) onlySub(t testing.TB) *subscriber {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.conns) != 1 {
		t.Fatalf("%d connections, want 1", len(h.conns))
	}
	for s := range h.conns {
		return s
	}
	return nil
}

// smallBufListener shrinks the kernel send buffer of accepted connections
// so that a client that stops reading stalls the server's writes after a
// few kilobytes instead of megabytes.
type smallBufListener struct {
	net.Listener
	size int
}

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetWriteBuffer(l.size)
		}
	}
	return c, err
}

// smallReadBufClient returns dial options whose TCP connection has a small
// kernel receive buffer.
func smallReadBufClient(size int) *websocket.DialOptions {
	d := &net.Dialer{}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err == nil {
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetReadBuffer(size)
				}
			}
			return c, err
		},
	}
	return &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}}
}
