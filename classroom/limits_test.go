package classroom

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/server/hub"
)

// waitLimit bounds every wait below; it turns a hang into a failure and is
// never what a test asserts.
const waitLimit = 15 * time.Second

func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    Limits
		want string
	}{
		{"defaults", Limits{}, ""},
		{"negative cap", Limits{ConnsPerClient: -1}, "connections per client"},
		{"cap too large", Limits{ConnsPerClient: 70000}, "connections per client"},
		{"no sign-ins", Limits{FailedSignIns: -1}, "failed sign-ins"},
		{"window too short", Limits{SignInWindow: time.Millisecond}, "sign-in window"},
		{"header timeout past the request's", Limits{Timeouts: httpguard.Timeouts{ReadHeaderTimeout: time.Hour}}, "ReadHeaderTimeout"},
		{"negative websocket idle", Limits{WebsocketIdle: -time.Second}, "websocket bounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Students: []string{"alice"}, DataDir: t.TempDir(), Binary: "/bin/false", Limits: tc.l})
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// runPortal serves c on a loopback port until the test ends.
func runPortal(t *testing.T, c *Classroom) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	testutil.EventuallyTrue(t, waitLimit, "the portal serving", func() bool { return c.conns.Load() != nil })
	return ln.Addr().String()
}

func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitLimit))
	return c
}

func rawGet(t *testing.T, c net.Conn, path, header string) (*http.Response, string) {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: localhost\r\n"+header+"\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// serverClosed reads c until the portal closes it; still open after
// waitLimit fails t.
func serverClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(waitLimit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the portal kept the connection open")
	}
}

// TestPortalConnsPerClient: one client holds at most ConnsPerClient
// connections; the next is answered 429 and closed, and a slot comes
// back when one of them ends.
func TestPortalConnsPerClient(t *testing.T) {
	const max = 4
	c, err := New(Config{Students: []string{"alice"}, DataDir: t.TempDir(), Token: portalInstructor, Binary: "/bin/false",
		Limits: Limits{ConnsPerClient: max}})
	if err != nil {
		t.Fatal(err)
	}
	c.backend = fakeBackend{addrs: map[string]string{}}
	addr := runPortal(t, c)
	var held []net.Conn
	for range max {
		conn := rawConn(t, addr)
		if res, b := rawGet(t, conn, "/healthz", ""); res.StatusCode != 200 || b != "ok\n" {
			t.Fatalf("within the cap: %d %q", res.StatusCode, b)
		}
		held = append(held, conn)
	}
	over := rawConn(t, addr)
	res, b := rawGet(t, over, "/healthz", "")
	var e httpguard.ErrorBody
	if err := json.Unmarshal([]byte(b), &e); err != nil || res.StatusCode != http.StatusTooManyRequests ||
		!strings.Contains(e.Error, "too many open connections from 127.0.0.1: at most 4 at once") {
		t.Fatalf("connection %d: %d %q", max+1, res.StatusCode, b)
	}
	serverClosed(t, over)
	_ = held[0].Close()
	conns := c.conns.Load()
	testutil.EventuallyTrue(t, waitLimit, "the closed connection's slot back", func() bool { return conns.Open("127.0.0.1") == max-1 })
	if res, _ := rawGet(t, rawConn(t, addr), "/healthz", ""); res.StatusCode != 200 {
		t.Fatalf("after one closed: %d", res.StatusCode)
	}
}

// silentLab accepts a websocket and then neither sends nor pings: a lab
// that cannot bound its clients itself.
type silentLab struct{ closed chan struct{} }

func (l *silentLab) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	_, _, _ = c.Read(context.Background()) // until the portal lets go
	_ = c.CloseNow()
	l.closed <- struct{}{}
}

// TestPortalStalledWebsocket: a client that opens a lab's /ws through the
// portal and then neither reads nor answers pings holds nothing past the
// deadline: the lab drops it when its pong does not come, or, when the lab
// does not (a silent lab), the portal's WebsocketIdle does; either way the
// portal closes the client's connection and its own to the lab.
func TestPortalStalledWebsocket(t *testing.T) {
	const stalled = 10
	for _, tc := range []struct {
		name  string
		limit Limits
		lab   func(t *testing.T) (http.Handler, func() bool) // the lab, and "every lab-side connection is gone"
	}{
		{"the lab's pings drop it", Limits{WebsocketIdle: time.Hour}, func(t *testing.T) (http.Handler, func() bool) {
			h, err := hub.New(hub.Config{PingInterval: 100 * time.Millisecond, PongTimeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Close(context.Background()) })
			return h, func() bool { return h.Stats().Connections == 0 }
		}},
		{"a silent lab: the portal's idle bound drops it", Limits{WebsocketIdle: 300 * time.Millisecond}, func(t *testing.T) (http.Handler, func() bool) {
			l := &silentLab{closed: make(chan struct{}, stalled)}
			n := 0
			return l, func() bool {
				for {
					select {
					case <-l.closed:
						n++
					default:
						return n == stalled
					}
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lab, labDone := tc.lab(t)
			labSrv := httptest.NewServer(lab)
			t.Cleanup(labSrv.Close)
			c, err := New(Config{Students: []string{"alice"}, DataDir: t.TempDir(), Token: portalInstructor, Binary: "/bin/false", Limits: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			c.backend = fakeBackend{addrs: map[string]string{"alice": strings.TrimPrefix(labSrv.URL, "http://")}}
			addr := runPortal(t, c)
			conns := c.conns.Load()
			var clients []net.Conn
			for range stalled {
				conn := rawConn(t, addr)
				res, _ := rawGet(t, conn, "/s/alice/ws", "Authorization: Bearer "+c.StudentToken("alice")+"\r\n"+
					"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n")
				if res.StatusCode != http.StatusSwitchingProtocols {
					t.Fatalf("upgrade through the portal: %d", res.StatusCode)
				}
				clients = append(clients, conn)
			}
			if n := conns.Open("127.0.0.1"); n != stalled {
				t.Fatalf("the portal holds %d connections of the client, want %d", n, stalled)
			}
			// From here the clients read nothing and answer nothing.
			testutil.EventuallyTrue(t, waitLimit, "the lab's side of every stalled websocket closed", labDone)
			testutil.EventuallyTrue(t, waitLimit, "the portal's side of every stalled websocket closed", func() bool { return conns.Open("127.0.0.1") == 0 })
			for _, conn := range clients {
				serverClosed(t, conn)
			}
		})
	}
}
