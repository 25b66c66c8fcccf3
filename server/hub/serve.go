package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"

	"github.com/coder/websocket"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

// snapshotAttempts bounds how often a snapshot is retaken when more than
// ReplaySize messages were published while it was being taken.
const snapshotAttempts = 3

const msgBadSince = "since must be a non-negative integer"

// maxClientMessage bounds what the read loop will read of a client message
// (clients are not supposed to send any).
const maxClientMessage = 4096

var errBadSince = errors.New(msgBadSince)

// stopReason tells a subscriber's writer why the hub removed it.
type stopReason int

const (
	stopGone     stopReason = iota // the connection ended on its own
	stopSlow                       // its queue was full at a Publish
	stopShutdown                   // Close was called
)

// subscriber is one upgraded connection.
type subscriber struct {
	conn   *websocket.Conn
	raw    net.Conn // hijacked connection, for Close's forced teardown; may be nil
	remote string
	q      chan *frame   // bounded; Publish sends without blocking
	stop   chan struct{} // closed under Hub.mu by removeLocked
	spoke  chan struct{} // the client sent a data message (buffered 1)
	last   uint64        // seq of the last frame written; writer goroutine only
	pongs  atomic.Uint64 // pings answered

	// guarded by Hub.mu
	stopped bool
	reason  stopReason
}

// forceClose tears the connection down without a close handshake. It does
// not block.
func (s *subscriber) forceClose() {
	if s.raw != nil {
		_ = s.raw.Close()
		return
	}
	go func() { _ = s.conn.CloseNow() }()
}

// parseSince reads the optional since query parameter.
func parseSince(rawQuery string) (since uint64, ok bool, err error) {
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return 0, false, errBadSince
	}
	vs, ok := vals["since"]
	if !ok {
		return 0, false, nil
	}
	if len(vs) != 1 {
		return 0, false, errBadSince
	}
	n, err := strconv.ParseUint(vs[0], 10, 64)
	if err != nil {
		return 0, false, errBadSince
	}
	return n, true, nil
}

// hijackRecorder remembers the net.Conn that websocket.Accept hijacks so
// that Close can tear it down even while coder/websocket is blocked.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

func (w *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.conn = c
	}
	return c, brw, err
}

func (w *hijackRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// canHijack mirrors how coder/websocket finds the http.Hijacker.
func canHijack(w http.ResponseWriter) bool {
	for {
		switch t := w.(type) {
		case http.Hijacker:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return false
		}
	}
}

// ServeHTTP upgrades the request to a WebSocket and streams messages to it:
// a snapshot (or, with ?since=N, the missed messages) and then every
// published message. A malformed since gets HTTP 400 before any upgrade; a
// closed hub answers 503.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	since, hasSince, err := parseSince(r.URL.RawQuery)
	if err != nil {
		httpguard.WriteError(w, http.StatusBadRequest, msgBadSince)
		return
	}
	if h.cfg.Epoch != "" && r.URL.Query().Get("epoch") != h.cfg.Epoch {
		hasSince = false
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		httpguard.WriteError(w, http.StatusServiceUnavailable, "hub is shutting down")
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	defer h.wg.Done()

	var rec *hijackRecorder
	aw := w
	if canHijack(w) {
		rec = &hijackRecorder{ResponseWriter: w}
		aw = rec
	}
	conn, err := websocket.Accept(aw, r, &h.acceptOpts)
	if err != nil {
		// Accept has written the HTTP error response.
		h.log.Debug("hub: websocket accept failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	s := &subscriber{
		conn:   conn,
		remote: r.RemoteAddr,
		q:      make(chan *frame, h.cfg.QueueSize),
		stop:   make(chan struct{}),
		spoke:  make(chan struct{}, 1),
	}
	if rec != nil {
		s.raw = rec.conn
	}

	h.mu.Lock()
	if h.forced {
		h.mu.Unlock()
		s.forceClose()
		return
	}
	h.conns[s] = struct{}{}
	h.mu.Unlock()

	// The client is not expected to send anything, but the connection must
	// be read for pongs and close frames to be processed. readCtx ends when
	// the connection does.
	conn.SetReadLimit(maxClientMessage)
	readCtx, readEnded := context.WithCancel(context.Background())
	readExited := make(chan struct{})
	go func() {
		defer close(readExited)
		defer readEnded()
		readLoop(s)
	}()
	defer func() {
		h.mu.Lock()
		h.removeLocked(s, stopGone)
		delete(h.conns, s)
		h.mu.Unlock()
		_ = s.conn.CloseNow()
		<-readExited
	}()

	h.log.Debug("hub: client connected", "remote", s.remote, "since", since, "hasSince", hasSince)

	first, replay, err := h.register(readCtx, s, since, hasSince)
	if err != nil {
		switch {
		case errors.Is(err, ErrClosed):
			h.mu.Lock()
			bye := h.bye
			h.mu.Unlock()
			h.sayBye(s, bye)
		case readCtx.Err() != nil:
			h.log.Debug("hub: client left during snapshot", "remote", s.remote)
		default:
			h.log.Error("hub: cannot start stream", "remote", s.remote, "err", err)
			_ = s.conn.Close(websocket.StatusInternalError, "snapshot failed; reconnect")
		}
		return
	}
	h.stream(s, readCtx, first, replay)
}

// readLoop reads until the connection ends. Reading is what processes
// pongs and close frames. A data message is a protocol violation; the
// writer is told and closes with 1008. (conn.CloseRead is not used: on a
// data message it calls Close from its own goroutine while the message
// still holds the read lock, so the close handshake and the wait for that
// very goroutine both run into their timeouts; in coder/websocket v1.8.15
// the connection lingered for more than 15 s.)
func readLoop(s *subscriber) {
	for {
		_, r, err := s.conn.Reader(context.Background())
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return
		}
		select {
		case s.spoke <- struct{}{}:
		default:
		}
	}
}

// register subscribes s to live frames and returns what must be written
// before them: either a snapshot frame followed by the frames published
// while the snapshot was taken, or (since covered by the ring) exactly the
// frames after since. The choice and the subscription happen under h.mu,
// so the concatenation has no gap and no duplicate.
func (h *Hub) register(ctx context.Context, s *subscriber, since uint64, hasSince bool) (*frame, []*frame, error) {
	if hasSince {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, nil, ErrClosed
		}
		if h.ring.covers(since, h.seq) {
			replay := h.ring.after(since, h.seq)
			s.last = since
			h.subs[s] = struct{}{}
			h.mu.Unlock()
			return nil, replay, nil
		}
		last := h.seq
		h.mu.Unlock()
		h.log.Debug("hub: since not in replay ring; sending snapshot", "remote", s.remote, "since", since, "lastSeq", last)
	}

	// The snapshot is taken without h.mu, so a slow Snapshot never delays
	// Publish; frames published meanwhile are replayed after it.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(h.closingCtx, cancel)()
	qtyp, _ := json.Marshal(TypeSnapshot)
	for range snapshotAttempts {
		h.mu.Lock()
		s0, closed := h.seq, h.closed
		h.mu.Unlock()
		if closed {
			return nil, nil, ErrClosed
		}
		at := h.clk.Now()
		var raw []byte
		if h.cfg.Snapshot != nil {
			v, err := h.cfg.Snapshot(sctx)
			if err != nil {
				if h.closingCtx.Err() != nil {
					return nil, nil, ErrClosed
				}
				return nil, nil, fmt.Errorf("snapshot: %w", err)
			}
			if v != nil {
				if raw, err = json.Marshal(v); err != nil {
					return nil, nil, fmt.Errorf("marshal snapshot: %w", err)
				}
			}
		}
		snap := &frame{seq: s0, b: encodeFrame(s0, qtyp, at, raw)}

		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, nil, ErrClosed
		}
		if h.ring.covers(s0, h.seq) {
			replay := h.ring.after(s0, h.seq)
			s.last = s0
			h.subs[s] = struct{}{}
			h.mu.Unlock()
			return snap, replay, nil
		}
		last := h.seq
		h.mu.Unlock()
		h.log.Warn("hub: replay ring overran while taking a snapshot; retrying", "remote", s.remote, "snapshotSeq", s0, "lastSeq", last)
	}
	return nil, nil, fmt.Errorf("more than %d messages published during each of %d snapshots", h.cfg.ReplaySize, snapshotAttempts)
}

// write sends one frame to s, bounded by WriteTimeout.
func (h *Hub) write(s *subscriber, f *frame) error {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.WriteTimeout)
	defer cancel()
	if err := s.conn.Write(ctx, websocket.MessageText, f.b); err != nil {
		return err
	}
	s.last = f.seq
	return nil
}

// stream is the writer goroutine of a registered subscriber: it writes the
// snapshot and replay, then drains the queue until the hub removes the
// subscriber, the client leaves, a write fails or a ping goes unanswered.
func (h *Hub) stream(s *subscriber, readCtx context.Context, first *frame, replay []*frame) {
	pingT := h.clk.NewTimer(h.cfg.PingInterval)
	defer pingT.Stop()
	// At most one Ping runs at a time, in its own goroutine: it waits for
	// the pong, which CloseRead's reader delivers.
	pingCtx, cancelPing := context.WithCancel(context.Background())
	pinging, pingDone := false, make(chan error, 1)
	defer func() {
		cancelPing()
		if pinging {
			<-pingDone
		}
	}()

	if first != nil {
		if err := h.write(s, first); err != nil {
			h.log.Debug("hub: write failed", "remote", s.remote, "err", err)
			return
		}
	}
	for _, f := range replay {
		if err := h.write(s, f); err != nil {
			h.log.Debug("hub: write failed", "remote", s.remote, "err", err)
			return
		}
	}
	for {
		// Prefer a stop over further queued frames.
		select {
		case <-s.stop:
			h.finish(s)
			return
		default:
		}
		select {
		case f := <-s.q:
			if err := h.write(s, f); err != nil {
				h.log.Debug("hub: write failed", "remote", s.remote, "err", err)
				return
			}
		case <-s.stop:
			h.finish(s)
			return
		case <-readCtx.Done():
			h.log.Debug("hub: client disconnected", "remote", s.remote, "lastSeq", s.last)
			return
		case <-s.spoke:
			h.log.Warn("hub: client sent a message; closing", "remote", s.remote)
			_ = s.conn.Close(websocket.StatusPolicyViolation, "this endpoint does not accept messages")
			return
		case <-pingT.C():
			if pinging {
				h.log.Warn("hub: no pong; dropping connection", "remote", s.remote, "timeout", h.cfg.PongTimeout)
				return
			}
			pinging = true
			go func() { pingDone <- s.conn.Ping(pingCtx) }()
			pingT.Reset(h.cfg.PongTimeout)
		case err := <-pingDone:
			pinging = false
			if err != nil {
				h.log.Warn("hub: ping failed; dropping connection", "remote", s.remote, "err", err)
				return
			}
			if !pingT.Stop() {
				select {
				case <-pingT.C():
				default:
				}
			}
			pingT.Reset(h.cfg.PingInterval)
			s.pongs.Add(1) // after re-arming, so tests can step the clock
		}
	}
}

// finish closes a subscriber the hub removed.
func (h *Hub) finish(s *subscriber) {
	switch s.reason {
	case stopSlow:
		h.log.Warn("hub: subscriber too slow; disconnecting", "remote", s.remote, "lastSeq", s.last)
		_ = s.conn.Close(websocket.StatusTryAgainLater, fmt.Sprintf("too slow; reconnect with ?since=%d", s.last))
	case stopShutdown:
		// Deliver what was published before Close, then say bye.
	drain:
		for {
			select {
			case f := <-s.q:
				if err := h.write(s, f); err != nil {
					return
				}
			default:
				break drain
			}
		}
		h.sayBye(s, h.bye)
	}
}

// sayBye writes the bye frame and closes with 1001.
func (h *Hub) sayBye(s *subscriber, bye *frame) {
	if err := h.write(s, bye); err != nil {
		return
	}
	_ = s.conn.Close(websocket.StatusGoingAway, "server shutting down")
}
