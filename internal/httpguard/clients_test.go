package httpguard

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmlab/ccmlab/internal/testutil"
)

func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"192.0.2.7:4321", "192.0.2.7"},
		{"192.0.2.7", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:1", "192.0.2.7"},
		{"[2001:db8:1:2:aaaa::1]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::9]:80", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:80", "2001:db8:1:3::/64"},
		{"@", "@"}, // a unix socket's address names nobody else
	} {
		if got := ClientKey(tc.addr); got != tc.want {
			t.Errorf("ClientKey(%q) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// The N+1th connection of one client is answered 429 and closed before
// any request is read; once one of its N ends, it may open another.
func TestClientConnsCap(t *testing.T) {
	const max = 3
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := LimitClientConns(raw, ClientConnsConfig{Max: max, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	addr := raw.Addr().String()

	get := func(c net.Conn) (*http.Response, string) {
		t.Helper()
		_ = c.SetDeadline(time.Now().Add(guard))
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	var held []net.Conn
	for range max {
		c := dialRaw(t, addr)
		if res, b := get(c); res.StatusCode != 200 || b != "ok" {
			t.Fatalf("connection within the cap: %d %q", res.StatusCode, b)
		}
		held = append(held, c)
	}
	if n := ln.Open("127.0.0.1"); n != max {
		t.Fatalf("Open = %d, want %d", n, max)
	}
	over := dialRaw(t, addr)
	res, b := get(over)
	var e ErrorBody
	if err := json.Unmarshal([]byte(b), &e); err != nil || res.StatusCode != http.StatusTooManyRequests ||
		!strings.Contains(e.Error, "too many open connections from 127.0.0.1: at most 3 at once") || res.Header.Get("Retry-After") == "" || !res.Close {
		t.Fatalf("over the cap: %d %v %q", res.StatusCode, res.Header, b)
	}
	closedByServer(t, over)
	if ln.Refused() != 1 {
		t.Fatalf("Refused = %d", ln.Refused())
	}
	_ = held[0].Close()
	testutil.EventuallyTrue(t, guard, "the closed connection's slot given back", func() bool { return ln.Open("127.0.0.1") == max-1 })
	if res, b := get(dialRaw(t, addr)); res.StatusCode != 200 || b != "ok" {
		t.Fatalf("after one closed: %d %q", res.StatusCode, b)
	}
}

func TestSignInsConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  SignInConfig
		want string
	}{
		{"defaults", SignInConfig{}, ""},
		{"negative burst", SignInConfig{Burst: -1}, "between 1 and 1000"},
		{"short window", SignInConfig{Window: time.Millisecond}, "between 1s and 24h"},
		{"negative clients", SignInConfig{MaxClients: -1}, "MaxClients"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSignIns(tc.cfg)
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSignIns(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	newSignIns := func(t *testing.T, maxClients int) *SignIns {
		s, err := NewSignIns(SignInConfig{Burst: 10, Window: time.Minute, MaxClients: maxClients, Clock: fc})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	from := func(addr string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr
		return r
	}
	try := func(s *SignIns, addr string, ok bool) (bool, time.Duration) {
		si, wait := s.Begin(from(addr))
		if si == nil {
			return false, wait
		}
		si.Done(ok)
		return true, 0
	}
	t.Run("the 11th failure is refused, one more each 6 s", func(t *testing.T) {
		s := newSignIns(t, 100)
		for i := range 10 {
			if ok, _ := try(s, "192.0.2.1:1000", false); !ok {
				t.Fatalf("failure %d refused", i+1)
			}
		}
		ok, wait := try(s, "192.0.2.1:1001", true)
		if ok || wait != 6*time.Second {
			t.Fatalf("11th: begun=%v wait=%v, want refused for 6s", ok, wait)
		}
		if msg := TooManyMessage(wait); msg != "too many failed sign-ins; try again in 6 s" {
			t.Fatalf("message %q", msg)
		}
		if ok, _ := try(s, "192.0.2.2:1000", false); !ok {
			t.Fatal("another client pays for the first one")
		}
		fc.Step(6 * time.Second)
		if ok, _ := try(s, "192.0.2.1:1000", true); !ok {
			t.Fatal("a right token after the wait is refused")
		}
		if ok, _ := try(s, "192.0.2.1:1000", false); !ok {
			t.Fatal("one failure more after the wait is refused")
		}
		if ok, wait := try(s, "192.0.2.1:1000", true); ok || wait != 6*time.Second {
			t.Fatalf("then: begun=%v wait=%v", ok, wait)
		}
		fc.Step(time.Minute)
		for i := range 10 {
			if ok, _ := try(s, "192.0.2.1:1000", false); !ok {
				t.Fatalf("after the window, failure %d refused", i+1)
			}
		}
	})
	t.Run("right tokens cost nothing", func(t *testing.T) {
		s := newSignIns(t, 100)
		for i := range 1000 {
			if ok, _ := try(s, "192.0.2.1:1000", true); !ok {
				t.Fatalf("sign-in %d refused", i+1)
			}
		}
	})
	t.Run("sign-ins under way hold budget", func(t *testing.T) {
		s := newSignIns(t, 100)
		var open []*SignIn
		for range 10 {
			si, _ := s.Begin(from("192.0.2.1:1"))
			if si == nil {
				t.Fatal("refused within the budget")
			}
			open = append(open, si)
		}
		if si, wait := s.Begin(from("192.0.2.1:1")); si != nil || wait <= 0 {
			t.Fatal("an 11th guess at once passed")
		}
		for _, si := range open {
			si.Done(true)
		}
		if si, _ := s.Begin(from("192.0.2.1:1")); si == nil {
			t.Fatal("refused once the others turned out right")
		} else {
			si.Done(true)
		}
	})
	t.Run("IPv6 neighbours share a budget", func(t *testing.T) {
		s := newSignIns(t, 100)
		for i := range 10 {
			if ok, _ := try(s, fmt.Sprintf("[2001:db8::%x]:1", i+1), false); !ok {
				t.Fatalf("failure %d refused", i+1)
			}
		}
		if ok, _ := try(s, "[2001:db8::ffff]:1", true); ok {
			t.Fatal("an address of the same /64 got a fresh budget")
		}
	})
	t.Run("clients past MaxClients share one budget", func(t *testing.T) {
		s := newSignIns(t, 1)
		if ok, _ := try(s, "192.0.2.1:1", false); !ok {
			t.Fatal("first client refused")
		}
		for i := range 10 {
			if ok, _ := try(s, fmt.Sprintf("198.51.100.%d:1", i+1), false); !ok {
				t.Fatalf("overflow failure %d refused", i+1)
			}
		}
		if ok, _ := try(s, "203.0.113.9:1", true); ok {
			t.Fatal("a new client past MaxClients got a budget of its own")
		}
		fc.Step(time.Minute) // the first client's budget is whole again: forgotten
		if ok, _ := try(s, "203.0.113.9:1", false); !ok {
			t.Fatal("a new client is refused once the table has room")
		}
	})
}
