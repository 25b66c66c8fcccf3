package httpguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// ErrorBody is the body of every refusal of every ccmlab server:
// {"error": "..."}. Clients (the page's api(), the classroom's lab
// client) read it with this type, so the shape is written down once.
type ErrorBody struct {
	Error string `json:"error"`
}

// WriteError answers {"error": msg} with code. Every refusal of every
// ccmlab server goes through it, so clients parse one shape.
func WriteError(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(ErrorBody{Error: msg})
}

// Config says which Host headers a server answers to. Loopback names and
// addresses (localhost, 127.0.0.0/8, ::1) are always allowed.
type Config struct {
	// Listen is the server's listen address (host:port). Its host is
	// allowed; a wildcard (0.0.0.0, ::, empty) allows every IP address,
	// since the server is then reachable at any of the machine's
	// addresses and an IP literal cannot be rebound.
	Listen string
	// PublicURL is the URL users are given (the classroom's --url); its
	// host is allowed.
	PublicURL string
	// AllowedHosts are further host names or IP addresses (--allow-host),
	// without a port.
	AllowedHosts []string
}

// hostRE is a DNS name: labels of letters, digits and inner dashes.
var hostRE = regexp.MustCompile(`^(?i:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.(?i:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?))*\.?$`)

// ValidateHost accepts a host name or an IP address, without a port or a
// wildcard: the allowlist of --allow-host.
func ValidateHost(h string) error {
	if h == "" {
		return errors.New("empty host")
	}
	if net.ParseIP(strings.Trim(h, "[]")) != nil {
		return nil
	}
	if len(h) > 253 || !hostRE.MatchString(h) {
		return fmt.Errorf("host %q: give a DNS name or an IP address, without a port or a wildcard", h)
	}
	return nil
}

// Guard is the edge of one server.
type Guard struct {
	names map[string]bool // lower-case hosts without port
	anyIP bool
	cop   *http.CrossOriginProtection
}

// New checks cfg and builds the guard.
func New(cfg Config) (*Guard, error) {
	g := &Guard{names: map[string]bool{"localhost": true}, cop: http.NewCrossOriginProtection()}
	if cfg.Listen != "" {
		host, _, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("httpguard: listen address %q: %w", cfg.Listen, err)
		}
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			g.anyIP = true
		} else {
			g.names[normHost(host)] = true
		}
	}
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("httpguard: public URL %q has no host", cfg.PublicURL)
		}
		g.names[normHost(u.Hostname())] = true
	}
	for _, h := range cfg.AllowedHosts {
		if err := ValidateHost(h); err != nil {
			return nil, fmt.Errorf("--allow-host: %w", err)
		}
		g.names[normHost(h)] = true
	}
	return g, nil
}

// Loopback is the guard of a server only reachable at loopback names.
func Loopback() *Guard {
	g, _ := New(Config{})
	return g
}

func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// HostAllowed says whether a Host header (host or host:port) names this
// server.
func (g *Guard) HostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = normHost(host)
	if host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || g.anyIP || g.names[ip.String()] || g.names[host]
	}
	return g.names[host]
}

// IsWebsocket says whether r asks for a websocket upgrade.
func IsWebsocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

func crossOriginMsg(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" {
		return fmt.Sprintf("cross-origin request refused: origin %s is not %s", o, r.Host)
	}
	return "cross-origin request refused (Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site") + ")"
}

// CrossOrigin reports a cross-origin mutation, or a cross-origin websocket
// upgrade (a GET that CrossOriginProtection alone lets through, yet which
// opens the lab's live stream to another site's page).
func (g *Guard) CrossOrigin(r *http.Request) error {
	if IsWebsocket(r) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		r2 := *r
		r2.Method = http.MethodPost
		r = &r2
	}
	if err := g.cop.Check(r); err != nil {
		return errors.New(crossOriginMsg(r))
	}
	return nil
}

// CheckQuery refuses a malformed query or a repeated parameter: which of
// two values a handler would use is an accident of its code.
func CheckQuery(r *http.Request) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return fmt.Errorf("malformed query: %v", err)
	}
	var dup []string
	for k, v := range q {
		if len(v) > 1 {
			dup = append(dup, k)
		}
	}
	if len(dup) > 0 {
		slices.Sort(dup)
		return fmt.Errorf("query parameter %q is given %d times; give it once", dup[0], len(q[dup[0]]))
	}
	return nil
}

// Handler answers 421 for a foreign Host, 403 for a cross-origin mutation
// or websocket upgrade, 400 for a repeated or malformed query parameter,
// and otherwise runs next.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.HostAllowed(r.Host) {
			WriteError(w, http.StatusMisdirectedRequest, fmt.Sprintf("host %q is not this server's: open it by its own address (localhost, the --listen address, or a host given with --allow-host)", r.Host))
			return
		}
		if err := g.CrossOrigin(r); err != nil {
			WriteError(w, http.StatusForbidden, err.Error())
			return
		}
		if err := CheckQuery(r); err != nil {
			WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		next.ServeHTTP(w, r)
	})
}
