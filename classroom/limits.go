package classroom

import (
	"errors"
	"fmt"
	"time"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

// Limits bound what one client may hold at the portal, so that no student
// (or anyone who reaches the portal) can take a class's machine for
// themselves. Zero values take the defaults.
type Limits struct {
	// ConnsPerClient caps the connections one client address holds open
	// at once; past it a new connection is answered 429 before any
	// request is read, and closed. Behind one NAT address, or a reverse
	// proxy, a whole class is one client: raise it there. Default
	// httpguard.DefaultConnsPerClient (256).
	ConnsPerClient int
	// FailedSignIns is how many tokens that open nothing one client may
	// send before it is answered 429; one more is allowed each
	// SignInWindow/FailedSignIns. Defaults 10 and 1 minute.
	FailedSignIns int
	SignInWindow  time.Duration
	// Timeouts are the portal's HTTP bounds (httpguard's defaults).
	Timeouts httpguard.Timeouts
	// WebsocketIdle closes a proxied websocket (a lab's /ws) whose client
	// has sent nothing for this long. The lab pings every 15 s and a
	// browser answers each ping at once, so a live page is never that
	// quiet; the lab itself drops a client that misses a pong after 10 s,
	// and the portal lets go with it. This bound holds even when the lab
	// cannot. Default 60s.
	WebsocketIdle time.Duration
	// WebsocketWrite bounds each write to a proxied websocket's client.
	// Default 10s.
	WebsocketWrite time.Duration
}

const (
	defaultWebsocketIdle  = time.Minute
	defaultWebsocketWrite = 10 * time.Second
)

func (l *Limits) defaults() {
	if l.ConnsPerClient == 0 {
		l.ConnsPerClient = httpguard.DefaultConnsPerClient
	}
	if l.FailedSignIns == 0 {
		l.FailedSignIns = 10
	}
	if l.SignInWindow == 0 {
		l.SignInWindow = time.Minute
	}
	if l.WebsocketIdle == 0 {
		l.WebsocketIdle = defaultWebsocketIdle
	}
	if l.WebsocketWrite == 0 {
		l.WebsocketWrite = defaultWebsocketWrite
	}
}

func (l *Limits) validate() error {
	var errs []error
	if l.ConnsPerClient < 1 || l.ConnsPerClient > 65535 {
		errs = append(errs, fmt.Errorf("connections per client (--conns-per-client) must be between 1 and 65535, got %d", l.ConnsPerClient))
	}
	if l.FailedSignIns < 1 || l.FailedSignIns > 1000 {
		errs = append(errs, fmt.Errorf("failed sign-ins per client must be between 1 and 1000, got %d", l.FailedSignIns))
	}
	if l.SignInWindow < time.Second || l.SignInWindow > 24*time.Hour {
		errs = append(errs, fmt.Errorf("the sign-in window must be between 1s and 24h, got %v", l.SignInWindow))
	}
	if err := l.Timeouts.Validate(); err != nil {
		errs = append(errs, err)
	}
	if l.WebsocketIdle <= 0 || l.WebsocketWrite <= 0 {
		errs = append(errs, fmt.Errorf("websocket bounds must be positive, got idle %v, write %v", l.WebsocketIdle, l.WebsocketWrite))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the portal's limits: %w", err)
	}
	return nil
}
