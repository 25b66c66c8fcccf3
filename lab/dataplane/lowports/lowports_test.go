package lowports

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/internal/testutil"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/dataplane"
	"github.com/ccmlab/ccmlab/lab/dataplane/outside"
)

const (
	pubName  = "web-1234567890.us-east-1.elb.amazonaws.com"
	privName = "internal-db-1234567890.us-east-1.elb.amazonaws.com"
	page     = "<h1>Welcome to nginx!</h1>\n"
)

// needLowPorts skips where the mode cannot run, except under CI=true,
// where a missing capability is a failure.
func needLowPorts(t *testing.T, m *Mode) {
	t.Helper()
	if err := m.Check(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("under CI the low-port mode must run: %v", err)
		}
		t.Skipf("the low-port mode cannot run here: %v", err)
	}
}

// start runs the mode over one internet-facing load balancer (served by
// a stand-in for the data plane's listener) and one internal one.
func start(t *testing.T) *Mode {
	t.Helper()
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != pubName {
			http.Error(w, "wrong Host "+r.Host, http.StatusMisdirectedRequest)
			return
		}
		fmt.Fprint(w, page)
	})}
	go func() { _ = srv.Serve(backend) }()
	t.Cleanup(func() { _ = srv.Close() })
	view := outside.NewView([]cloud.LoadBalancer{
		{Name: "web", DNSName: pubName, Scheme: cloud.SchemeInternetFacing, Listeners: []cloud.Listener{{Port: 80}}},
		{Name: "db", DNSName: privName, Scheme: cloud.SchemeInternal, Addresses: []cloud.LBAddress{{IP: "10.0.1.9"}}, Listeners: []cloud.Listener{{Port: 80}}},
	}, []dataplane.ListenerInfo{{LB: "web", Port: 80, Address: backend.Addr().String()}, {LB: "db", Port: 80, Address: "127.0.0.1:1"}})
	// Not the lab's defaults, so a lab running on this machine is left
	// alone.
	m, err := New(Config{
		Source: func(context.Context) (outside.View, error) { return view, nil },
		Pool:   netip.MustParsePrefix("127.0.91.0/24"), DNS: netip.MustParseAddrPort("127.0.92.53:53"),
		Interval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	needLowPorts(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	testutil.Eventually(t, 10*time.Second, "web's own address on port 80", func() (bool, string) {
		a, ok := m.Addresses()["web"]
		if !ok {
			return false, "no address yet"
		}
		c, err := net.DialTimeout("tcp", netip.AddrPortFrom(a, 80).String(), time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
	return m
}

func TestDNS(t *testing.T) {
	m := start(t)
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", m.DNS().String())
	}}
	for _, tc := range []struct {
		name string
		want string // "" for no address (NXDOMAIN or none)
	}{
		{pubName, m.Addresses()["web"].String()},
		{strings.ToUpper(pubName), m.Addresses()["web"].String()},
		{privName, ""}, // known, no address: see Mode.resolve
		{"example.com", ""},
		{"web.default.svc.cluster.local", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs, err := r.LookupHost(context.Background(), tc.name)
			if tc.want == "" {
				var de *net.DNSError
				if !errors.As(err, &de) || !de.IsNotFound {
					t.Fatalf("LookupHost = %v, %v; want no address", addrs, err)
				}
				return
			}
			if err != nil || len(addrs) != 1 || addrs[0] != tc.want {
				t.Fatalf("LookupHost = %v, %v; want [%s]", addrs, err, tc.want)
			}
		})
	}
}

// TestHostCurl: the host's own curl, unchanged, whose resolver is the
// lab's (a private mount namespace with the lab's DNS in its
// resolv.conf), reaches http://<hostname>/ on port 80.
func TestHostCurl(t *testing.T) {
	curl, err1 := exec.LookPath("curl")
	unshare, err2 := exec.LookPath("unshare")
	if err := errors.Join(err1, err2); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("under CI this test needs curl and unshare: %v", err)
		}
		t.Skip(err)
	}
	m := start(t)
	dir := t.TempDir()
	resolv, nss := filepath.Join(dir, "resolv.conf"), filepath.Join(dir, "nsswitch.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+m.DNS().Addr().String()+"\noptions timeout:2 attempts:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// files then DNS, whatever the host's own (mdns, systemd-resolved).
	if err := os.WriteFile(nss, []byte("hosts: files dns\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		url  string
		code int
		out  string
	}{
		{"internet-facing name on port 80", "http://" + pubName + "/", 0, page},
		{"internal name: no address from outside", "http://" + privName + "/", 6, ""},
		{"not the lab's name", "http://nope.example/", 6, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := `mount --bind "$1" /etc/resolv.conf && mount --bind "$2" /etc/nsswitch.conf && exec "$3" -s --noproxy '*' --connect-timeout 1 -m 3 "$4"`
			cmd := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c", script, "sh", resolv, nss, curl, tc.url)
			cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin"}
			out, err := cmd.Output()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || string(out) != tc.out {
				stderr := ""
				if ee != nil {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("curl %s: exit %d, output %q (%s); want exit %d, %q", tc.url, code, out, stderr, tc.code, tc.out)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	src := func(context.Context) (outside.View, error) { return outside.View{}, nil }
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", Config{Source: src}, true},
		{"no source", Config{}, false},
		{"pool off loopback", Config{Source: src, Pool: netip.MustParsePrefix("10.0.0.0/24")}, false},
		{"pool too small", Config{Source: src, Pool: netip.MustParsePrefix("127.0.1.0/31")}, false},
		{"DNS off loopback", Config{Source: src, DNS: netip.MustParseAddrPort("10.0.0.1:53")}, false},
		{"DNS in the pool", Config{Source: src, DNS: netip.MustParseAddrPort("127.0.1.53:53")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if (err == nil) != tc.ok {
				t.Errorf("New: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
