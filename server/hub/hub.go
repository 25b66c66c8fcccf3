package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/internal/labapi"
)

// Defaults applied by New for zero Config fields.
const (
	DefaultReplaySize   = 4096
	DefaultQueueSize    = 256
	DefaultPingInterval = 15 * time.Second
	DefaultPongTimeout  = 10 * time.Second
	DefaultWriteTimeout = 5 * time.Second

	// DefaultRecordEvery is what the lab sets Config.RecordEvery to: with
	// the default ring, a recording spans 3584 to 4096 frames.
	DefaultRecordEvery = 512

	maxReplaySize = 1 << 20
	maxQueueSize  = 1 << 16
	maxTypeLen    = 64
)

// Message types. The hub itself produces TypeSnapshot and TypeBye; the
// others are the intended set published by the server package, which also
// defines their data payloads.
const (
	TypeSnapshot    = labapi.TypeSnapshot
	TypeBye         = labapi.TypeBye
	TypeObject      = "object"
	TypeCall        = "call"
	TypeControllers = "controllers"
	TypeFlow        = "flow"
	TypeTrace       = "trace"
	TypeResync      = labapi.TypeResync
)

// ErrClosed is returned by Publish after Close has been called.
var ErrClosed = errors.New("hub: closed")

// Message is the envelope of every WebSocket text message sent to
// browsers (labapi, where the classroom reads it too).
type Message = labapi.Message

// Config configures a Hub. The zero value is usable: New fills defaults.
type Config struct {
	// ReplaySize bounds the replay ring (messages). Default 4096.
	ReplaySize int
	// RecordEvery, when positive, makes the hub keep a recording
	// (GET /api/recording, see recording.go): a base snapshot is taken
	// every RecordEvery published frames and kept while the replay ring
	// holds every frame after it. At most ReplaySize/2, so the recording
	// always spans at least half the ring. Zero: no recording (a hub
	// without one never calls Snapshot on its own).
	RecordEvery int
	// QueueSize bounds each subscriber's queue (messages). A subscriber
	// whose queue is full when a message is published is disconnected.
	// Default 256.
	QueueSize int
	// PingInterval is the time from connect, or from the last pong, to the
	// next ping the hub sends. Default 15s.
	PingInterval time.Duration
	// PongTimeout is how long the hub waits for the pong answering a ping
	// before it drops the connection as dead. Default 10s.
	PongTimeout time.Duration
	// WriteTimeout bounds each message write. A write that times out closes
	// the connection. It is enforced by coder/websocket with a wall-clock
	// context deadline, not with Clock. Default 5s.
	WriteTimeout time.Duration
	// OriginPatterns lists the extra origins (path.Match host patterns, see
	// websocket.AcceptOptions) allowed to connect. Empty: same origin only
	// (plus requests without an Origin header, i.e. non-browser clients).
	OriginPatterns []string
	// Snapshot returns the current state for a fresh client. The hub wraps
	// it as a "snapshot" message whose Seq is the last published seq when
	// the snapshot was started; every message published after that is
	// delivered after it. Snapshot is not called with hub locks held, so it
	// may take time and may even call Publish, but the state it returns
	// must include the effect of every message already published when it
	// is called (mutate state, then Publish). It may also include effects
	// of later messages, which the client then sees again: payloads should
	// be idempotent (full object state, not deltas). Nil: snapshots carry
	// no data.
	Snapshot func(ctx context.Context) (any, error)
	// Epoch names this run of the server. Sequence numbers restart at 1
	// when the process restarts, so a client resuming with ?since=N must
	// also send the epoch it saw (?epoch=E, from the snapshot); a different
	// or missing epoch gets a fresh snapshot instead of a wrong replay.
	// Empty: epochs are not checked.
	Epoch string
	// Clock drives message timestamps, the ping interval and the pong
	// timeout. Default real.
	Clock clock.Clock
	// Logger receives connection-level events. Default slog.Default().
	Logger *slog.Logger
}

// validate checks c and fills defaults for zero fields.
func (c *Config) validate() error {
	var errs []error
	posInt := func(name string, v *int, def, max int) {
		switch {
		case *v < 0 || *v > max:
			errs = append(errs, fmt.Errorf("%s must be between 0 (default %d) and %d, got %d", name, def, max, *v))
		case *v == 0:
			*v = def
		}
	}
	posDur := func(name string, v *time.Duration, def time.Duration) {
		switch {
		case *v < 0:
			errs = append(errs, fmt.Errorf("%s must not be negative, got %v", name, *v))
		case *v == 0:
			*v = def
		}
	}
	posInt("ReplaySize", &c.ReplaySize, DefaultReplaySize, maxReplaySize)
	posInt("QueueSize", &c.QueueSize, DefaultQueueSize, maxQueueSize)
	if c.RecordEvery < 0 || c.RecordEvery > c.ReplaySize/2 {
		errs = append(errs, fmt.Errorf("RecordEvery must be between 0 (no recording) and ReplaySize/2 = %d, got %d", c.ReplaySize/2, c.RecordEvery))
	}
	posDur("PingInterval", &c.PingInterval, DefaultPingInterval)
	posDur("PongTimeout", &c.PongTimeout, DefaultPongTimeout)
	posDur("WriteTimeout", &c.WriteTimeout, DefaultWriteTimeout)
	for i, p := range c.OriginPatterns {
		if p == "" {
			errs = append(errs, fmt.Errorf("OriginPatterns[%d] is empty", i))
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			errs = append(errs, fmt.Errorf("OriginPatterns[%d] %q: %w", i, p, err))
		}
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hub: invalid config: %w", err)
	}
	return nil
}

// Stats is a point-in-time view of the hub.
type Stats struct {
	Subscribers int    `json:"subscribers"` // connections receiving live messages
	Connections int    `json:"connections"` // upgraded connections still being served (includes ones taking a snapshot or closing)
	Published   uint64 `json:"published"`   // messages published since New
	Dropped     uint64 `json:"dropped"`     // subscribers disconnected for being too slow
	LastSeq     uint64 `json:"lastSeq"`     // seq of the last published message, 0 if none
}

// frame is one encoded message, shared read-only by the ring and every
// subscriber queue.
type frame struct {
	seq uint64
	at  time.Time // publication time (for a snapshot: when it was started)
	b   []byte
}

// ring holds the last len(buf) frames; the frame with seq s lives at
// buf[s%len(buf)]. Seqs are contiguous, so it holds last-n+1..last.
type ring struct {
	buf []*frame
	n   int
}

func (r *ring) push(f *frame) {
	r.buf[f.seq%uint64(len(r.buf))] = f
	if r.n < len(r.buf) {
		r.n++
	}
}

// covers reports whether every frame with seq in (since, last] is held.
func (r *ring) covers(since, last uint64) bool {
	return since <= last && last-since <= uint64(r.n)
}

// after returns the frames with seq in (since, last]; covers must be true.
func (r *ring) after(since, last uint64) []*frame {
	if since == last {
		return nil
	}
	out := make([]*frame, 0, last-since)
	for s := since + 1; s <= last; s++ {
		out = append(out, r.buf[s%uint64(len(r.buf))])
	}
	return out
}

// Hub fans published messages out to WebSocket subscribers.
type Hub struct {
	cfg        Config
	clk        clock.Clock
	log        *slog.Logger
	acceptOpts websocket.AcceptOptions

	closingCtx    context.Context // cancelled when Close starts
	cancelClosing context.CancelFunc
	wg            sync.WaitGroup // one per ServeHTTP call past the closed check

	mu      sync.Mutex
	seq     uint64
	ring    ring
	subs    map[*subscriber]struct{} // registered: receive published frames
	conns   map[*subscriber]struct{} // every upgraded connection being served
	dropped uint64
	closed  bool
	forced  bool   // Close's context expired; connections are torn down
	bye     *frame // set by Close

	// The recording (recording.go): bases in seq order, the oldest first.
	bases      []*frame
	basing     bool      // a goroutine is taking a base
	baseFailed time.Time // when the last attempt failed (zero: it did not)
}

// New returns a Hub configured by cfg.
func New(cfg Config) (*Hub, error) {
	cfg.OriginPatterns = append([]string(nil), cfg.OriginPatterns...)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	h := &Hub{
		cfg: cfg,
		clk: cfg.Clock,
		log: cfg.Logger,
		acceptOpts: websocket.AcceptOptions{
			OriginPatterns: cfg.OriginPatterns,
		},
		ring:  ring{buf: make([]*frame, cfg.ReplaySize)},
		subs:  make(map[*subscriber]struct{}),
		conns: make(map[*subscriber]struct{}),
	}
	h.closingCtx, h.cancelClosing = context.WithCancel(context.Background())
	return h, nil
}

func checkType(typ string) error {
	switch {
	case typ == "":
		return errors.New("hub: message type is empty")
	case len(typ) > maxTypeLen:
		return fmt.Errorf("hub: message type longer than %d bytes", maxTypeLen)
	case typ == TypeSnapshot || typ == TypeBye:
		return fmt.Errorf("hub: message type %q is reserved for the hub", typ)
	}
	return nil
}

// Publish marshals data, assigns it the next seq, appends it to the replay
// ring and queues it for every subscriber without blocking. A subscriber
// whose queue is full is dropped (and told to reconnect with ?since=).
// A nil data is omitted from the message. Publish is safe for concurrent
// use; the seq order is the delivery order.
func (h *Hub) Publish(typ string, data any) (uint64, error) {
	if err := checkType(typ); err != nil {
		return 0, err
	}
	var raw []byte
	if data != nil {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return 0, fmt.Errorf("hub: marshal %q data: %w", typ, err)
		}
	}
	qtyp, _ := json.Marshal(typ) // a string always marshals

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, ErrClosed
	}
	h.seq++
	now := h.clk.Now()
	f := &frame{seq: h.seq, at: now, b: encodeFrame(h.seq, qtyp, now, raw)}
	h.ring.push(f)
	h.maybeBaseLocked()
	for s := range h.subs {
		select {
		case s.q <- f:
		default:
			h.dropped++
			h.removeLocked(s, stopSlow)
		}
	}
	return f.seq, nil
}

// LastSeq returns the seq of the last published message (0 if none).
func (h *Hub) LastSeq() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// Stats returns counters describing the hub.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Stats{
		Subscribers: len(h.subs),
		Connections: len(h.conns),
		Published:   h.seq,
		Dropped:     h.dropped,
		LastSeq:     h.seq,
	}
}

// Close stops the hub: Publish fails with ErrClosed from now on, new
// connections get HTTP 503, and every subscriber is sent the messages
// already queued for it, then a "bye" message, then a close frame with
// status 1001 (going away). Close waits for every connection's goroutine
// to finish. If ctx ends first, the remaining connections are torn down
// without a close handshake and Close returns ctx's error.
// Close may be called more than once.
func (h *Hub) Close(ctx context.Context) error {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		h.cancelClosing()
		qtyp, _ := json.Marshal(TypeBye)
		h.bye = &frame{seq: h.seq, b: encodeFrame(h.seq, qtyp, h.clk.Now(), []byte(`{"reason":"server shutting down"}`))}
		for s := range h.subs {
			h.removeLocked(s, stopShutdown)
		}
	}
	h.mu.Unlock()

	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	h.mu.Lock()
	h.forced = true
	n := len(h.conns)
	for s := range h.conns {
		s.forceClose()
	}
	h.mu.Unlock()
	h.log.Warn("hub: close deadline passed; tearing down connections", "connections", n)
	return fmt.Errorf("hub: close: %w", ctx.Err())
}

// removeLocked unregisters s and tells its writer why. h.mu must be held.
func (h *Hub) removeLocked(s *subscriber, why stopReason) {
	delete(h.subs, s)
	if !s.stopped {
		s.stopped = true
		s.reason = why
		close(s.stop)
	}
}

// encodeFrame builds the JSON encoding of Message{seq, type, t, data}
// without reflection. quotedType is the JSON string of the type; data must
// be valid compact JSON or empty (omitted).
func encodeFrame(seq uint64, quotedType []byte, t time.Time, data []byte) []byte {
	const fixed = len(`{"seq":,"type":,"time":"","data":}`)
	b := make([]byte, 0, fixed+20+len(quotedType)+len(time.RFC3339Nano)+len(data))
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"type":`...)
	b = append(b, quotedType...)
	b = append(b, `,"time":"`...)
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if len(data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	return append(b, '}')
}
