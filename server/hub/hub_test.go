package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "zero value gets defaults", cfg: Config{}},
		{name: "negative replay", cfg: Config{ReplaySize: -1}, wantErr: "ReplaySize"},
		{name: "huge replay", cfg: Config{ReplaySize: maxReplaySize + 1}, wantErr: "ReplaySize"},
		{name: "negative queue", cfg: Config{QueueSize: -1}, wantErr: "QueueSize"},
		{name: "negative ping", cfg: Config{PingInterval: -time.Second}, wantErr: "PingInterval"},
		{name: "negative pong", cfg: Config{PongTimeout: -time.Second}, wantErr: "PongTimeout"},
		{name: "negative write", cfg: Config{WriteTimeout: -time.Second}, wantErr: "WriteTimeout"},
		{name: "bad origin pattern", cfg: Config{OriginPatterns: []string{"[a-"}}, wantErr: "OriginPatterns[0]"},
		{name: "empty origin pattern", cfg: Config{OriginPatterns: []string{"ok.example", ""}}, wantErr: "OriginPatterns[1]"},
		{name: "good origin patterns", cfg: Config{OriginPatterns: []string{"*.lab.example", "https://x.example"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			err := cfg.validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				if cfg.ReplaySize != DefaultReplaySize || cfg.QueueSize != DefaultQueueSize ||
					cfg.PingInterval != DefaultPingInterval || cfg.PongTimeout != DefaultPongTimeout ||
					cfg.WriteTimeout != DefaultWriteTimeout || cfg.Clock == nil || cfg.Logger == nil {
					t.Fatalf("defaults not applied: %+v", cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("validate error = %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
	if _, err := New(Config{QueueSize: -5}); err == nil {
		t.Fatal("New accepted an invalid config")
	}
}

func TestEncodeFrameMatchesMessage(t *testing.T) {
	at := time.Date(2026, 7, 1, 12, 30, 0, 123456789, time.FixedZone("X", 3600))
	for _, data := range []any{nil, map[string]any{"kind": "Node", "name": "n1"}, []int{1, 2}, "a<b>&\"c\"", json.RawMessage(`{"a": 1}`)} {
		var raw []byte
		if data != nil {
			raw, _ = json.Marshal(data)
		}
		qtyp, _ := json.Marshal("object")
		got := encodeFrame(42, qtyp, at, raw)
		want, err := json.Marshal(Message{Seq: 42, Type: "object", Time: at.UTC(), Data: raw})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("encodeFrame(%v)\n got %s\nwant %s", data, got, want)
		}
	}
}

func TestPublishValidation(t *testing.T) {
	h, err := New(Config{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"", TypeSnapshot, TypeBye, strings.Repeat("x", maxTypeLen+1)} {
		if _, err := h.Publish(typ, nil); err == nil {
			t.Errorf("Publish(%q) succeeded", typ)
		}
	}
	if _, err := h.Publish(TypeObject, make(chan int)); err == nil {
		t.Error("Publish of unmarshalable data succeeded")
	}
	if got := h.LastSeq(); got != 0 {
		t.Fatalf("failed publishes consumed seqs: LastSeq = %d", got)
	}
	for i := uint64(1); i <= 3; i++ {
		if seq := mustPublish(t, h, TypeTrace, i); seq != i {
			t.Fatalf("seq = %d, want %d", seq, i)
		}
	}
	st := h.Stats()
	if st.Published != 3 || st.LastSeq != 3 || st.Subscribers != 0 || st.Dropped != 0 {
		t.Fatalf("Stats = %+v", st)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Publish(TypeTrace, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close: err = %v, want ErrClosed", err)
	}
}

func TestSinceParsing(t *testing.T) {
	ts := newTestServer(t, Config{}, nil)
	httpURL := ts.srv.URL + "/ws"
	tests := []struct {
		query string
		bad   bool
	}{
		{query: "", bad: false},
		{query: "since=0", bad: false},
		{query: "since=42", bad: false},
		{query: "since=007", bad: false},
		{query: "since=18446744073709551615", bad: false},
		{query: "other=1", bad: false},
		{query: "since=", bad: true},
		{query: "since", bad: true},
		{query: "since=abc", bad: true},
		{query: "since=-1", bad: true},
		{query: "since=%2B1", bad: true},
		{query: "since=1.5", bad: true},
		{query: "since=0x10", bad: true},
		{query: "since=1e3", bad: true},
		{query: "since=1_000", bad: true},
		{query: "since=%201", bad: true},
		{query: "since=18446744073709551616", bad: true},
		{query: "since=1&since=2", bad: true},
		{query: "since=%zz", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			if !tt.bad {
				c := dial(t, ts.wsURL(tt.query), nil)
				_ = c.Close(websocket.StatusNormalClosure, "")
				return
			}
			// No upgrade headers: the 400 must come before any upgrade check.
			resp, err := http.Get(httpURL + "?" + tt.query)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400 (body %s)", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if got := strings.TrimSpace(string(body)); got != `{"error":"since must be a non-negative integer"}` {
				t.Fatalf("body %s", got)
			}
			// A real WebSocket handshake gets the same answer.
			if _, err := dialErr(ts.wsURL(tt.query), nil); err == nil || !strings.Contains(err.Error(), "400") {
				t.Fatalf("websocket dial error = %v, want a 400", err)
			}
		})
	}
}

func TestOrigin(t *testing.T) {
	evil := &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://evil.example"}}}
	lab := &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://lab.example"}}}

	strict := newTestServer(t, Config{}, nil)
	if _, err := dialErr(strict.url, evil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("cross-origin dial error = %v, want 403", err)
	}
	// Same origin (the request host) is always allowed.
	same := &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {strict.srv.URL}}}
	dial(t, strict.url, same)

	open := newTestServer(t, Config{OriginPatterns: []string{"lab.example"}}, nil)
	dial(t, open.url, lab)
	if _, err := dialErr(open.url, evil); err == nil {
		t.Fatal("unlisted origin accepted")
	}
}

// Every one of 200 clients receives the snapshot and then the identical,
// gap-free sequence of messages published concurrently by 4 goroutines.
func TestFanoutIdenticalSequence(t *testing.T) {
	const (
		clients    = 200
		publishers = 4
		perPub     = 75
		total      = publishers * perPub
	)
	// QueueSize >= total and a write or pong may take a minute: no client
	// is dropped however slowly it runs (the race detector on a loaded
	// 2-core machine stretched a write past the 5 s default, and the hub
	// closed those clients as it should).
	ts := newTestServer(t, Config{QueueSize: 2 * total, WriteTimeout: time.Minute, PongTimeout: time.Minute}, nil)
	h := ts.hub

	conns := make([]*websocket.Conn, clients)
	for i := range conns {
		conns[i] = dial(t, ts.url, nil)
	}
	waitFor(t, "all subscribed", func() bool { return h.Stats().Subscribers == clients })

	got := make([][][]byte, clients)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			m, err := readMsg(c)
			if err != nil || m.Type != TypeSnapshot || m.Seq != 0 {
				t.Errorf("client %d: first message %+v, %v; want snapshot seq 0", i, m, err)
				return
			}
			for range total {
				b, err := readRaw(c)
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				got[i] = append(got[i], b)
			}
		})
	}
	var pub sync.WaitGroup
	for p := range publishers {
		pub.Go(func() {
			for k := range perPub {
				if _, err := h.Publish(TypeObject, map[string]int{"publisher": p, "k": k}); err != nil {
					t.Errorf("Publish: %v", err)
				}
			}
		})
	}
	pub.Wait()
	wg.Wait()
	if t.Failed() {
		return
	}

	// The reference: the ring, which holds every message in seq order.
	h.mu.Lock()
	want := h.ring.after(0, h.seq)
	h.mu.Unlock()
	if len(want) != total {
		t.Fatalf("ring holds %d messages, want %d", len(want), total)
	}
	for k, f := range want {
		var m Message
		if err := json.Unmarshal(f.b, &m); err != nil || m.Seq != uint64(k+1) || m.Type != TypeObject {
			t.Fatalf("message %d: %+v, %v", k, m, err)
		}
	}
	for i := range got {
		for k := range want {
			if !bytes.Equal(got[i][k], want[k].b) {
				t.Fatalf("client %d message %d = %s, want %s", i, k, got[i][k], want[k].b)
			}
		}
	}
	if st := h.Stats(); st.Dropped != 0 || st.Subscribers != clients {
		t.Fatalf("Stats = %+v", st)
	}
}

// A client that never reads fills its queue and is dropped; the other
// clients still receive every message, in order. The dropped client finds,
// once it reads, a gap-free prefix and a 1013 close telling it where to
// resume, and resuming there loses nothing.
func TestSlowClientDropped(t *testing.T) {
	const healthy = 3
	ts := newTestServer(t, Config{
		QueueSize: 4,
		// Long enough that the stalled write is still pending when the
		// slow client starts reading, so its close frame gets through.
		WriteTimeout: time.Minute,
	}, func(l net.Listener) net.Listener { return smallBufListener{l, 4096} })
	h := ts.hub

	slow := dial(t, ts.url, nil)
	type update struct {
		seq uint64
		err error
	}
	feeds := make([]chan update, healthy)
	for i := range feeds {
		c := dial(t, ts.url, nil)
		feed := make(chan update, 1024)
		feeds[i] = feed
		go func() {
			var last uint64
			for {
				m, err := readMsg(c)
				if err != nil {
					feed <- update{err: err}
					return
				}
				if m.Type != TypeSnapshot && m.Seq != last+1 {
					feed <- update{err: fmt.Errorf("seq %d after %d", m.Seq, last)}
					return
				}
				last = m.Seq
				feed <- update{seq: m.Seq}
			}
		}()
	}
	waitFor(t, "all subscribed", func() bool { return h.Stats().Subscribers == healthy+1 })

	// awaitAll waits until every healthy client has received seq.
	awaitAll := func(seq uint64) {
		t.Helper()
		for i, feed := range feeds {
			for {
				select {
				case u := <-feed:
					if u.err != nil {
						t.Fatalf("healthy client %d: %v", i, u.err)
					}
					if u.seq < seq {
						continue
					}
				case <-time.After(guard):
					t.Fatalf("healthy client %d did not receive seq %d", i, seq)
				}
				break
			}
		}
	}
	awaitAll(0) // snapshots

	payload := strings.Repeat("x", 2048)
	var seq uint64
	for h.Stats().Dropped == 0 {
		if seq == 5000 {
			t.Fatal("slow client never dropped")
		}
		seq = mustPublish(t, h, TypeTrace, payload)
		awaitAll(seq) // the healthy clients keep up, message by message
	}
	for range 20 {
		seq = mustPublish(t, h, TypeTrace, payload)
		awaitAll(seq)
	}
	if st := h.Stats(); st.Dropped != 1 || st.Subscribers != healthy {
		t.Fatalf("Stats = %+v, want 1 dropped, %d subscribers", st, healthy)
	}

	// The slow client now reads: snapshot, a contiguous prefix, then 1013.
	m := mustRead(t, slow)
	if m.Type != TypeSnapshot {
		t.Fatalf("first message %s", m.Type)
	}
	var last uint64
	for {
		m, err := readMsg(slow)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("slow client read error %v, want a close frame", err)
			}
			if ce.Code != websocket.StatusTryAgainLater {
				t.Fatalf("close code %d, want 1013", ce.Code)
			}
			if want := fmt.Sprintf("too slow; reconnect with ?since=%d", last); ce.Reason != want {
				t.Fatalf("close reason %q, want %q", ce.Reason, want)
			}
			break
		}
		if m.Seq != last+1 {
			t.Fatalf("slow client got seq %d after %d", m.Seq, last)
		}
		last = m.Seq
	}
	// The prefix may be empty: under load the hub can fill the slow
	// client's queue before its writer got to send anything after the
	// snapshot. What matters is that it is a strict prefix, that the close
	// reason names its end, and that resuming from there loses nothing.
	if last >= seq {
		t.Fatalf("slow client received up to %d of %d; expected a strict prefix", last, seq)
	}
	t.Logf("slow client dropped; it had been sent up to seq %d of %d", last, seq)

	// Resuming from the advertised seq delivers exactly the rest.
	again := dial(t, ts.wsURL(fmt.Sprintf("since=%d", last)), nil)
	expectSeqs(t, again, last+1, seq)
	next := mustPublish(t, h, TypeTrace, "after")
	expectSeqs(t, again, next, next)
	awaitAll(next)
}

func TestReconnectSince(t *testing.T) {
	ts := newTestServer(t, Config{}, nil)
	h := ts.hub
	for i := range 10 {
		mustPublish(t, h, TypeObject, i)
	}
	a := dial(t, ts.url, nil)
	if m := mustRead(t, a); m.Type != TypeSnapshot || m.Seq != 10 {
		t.Fatalf("fresh client first message %s seq %d, want snapshot seq 10", m.Type, m.Seq)
	}
	waitFor(t, "subscribed", func() bool { return h.Stats().Subscribers == 1 })
	for i := range 5 {
		mustPublish(t, h, TypeObject, i)
	}
	expectSeqs(t, a, 11, 15)
	_ = a.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "unsubscribed", func() bool { return h.Stats().Connections == 0 })

	for i := range 5 {
		mustPublish(t, h, TypeObject, i)
	}
	b := dial(t, ts.wsURL("since=15"), nil)
	expectSeqs(t, b, 16, 20) // missed while away; no snapshot, no duplicate
	waitFor(t, "subscribed", func() bool { return h.Stats().Subscribers == 1 })
	mustPublish(t, h, TypeObject, "live")
	expectSeqs(t, b, 21, 21)

	// since == last: nothing to replay, then live.
	c := dial(t, ts.wsURL("since=21"), nil)
	waitFor(t, "subscribed", func() bool { return h.Stats().Subscribers == 2 })
	mustPublish(t, h, TypeObject, "live")
	expectSeqs(t, c, 22, 22)
	expectSeqs(t, b, 22, 22)
}

func TestSinceRingBoundary(t *testing.T) {
	// After 30 messages a ring of 8 holds 23..30, so since >= 22 replays
	// and anything older gets a snapshot.
	tests := []struct {
		since        uint64
		wantSnapshot bool
	}{
		{since: 0, wantSnapshot: true},
		{since: 5, wantSnapshot: true},
		{since: 21, wantSnapshot: true},
		{since: 22},
		{since: 27},
		{since: 30},
		{since: 31, wantSnapshot: true},   // ahead of the hub: e.g. hub restarted
		{since: 1000, wantSnapshot: true}, // far ahead
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.since), func(t *testing.T) {
			ts := newTestServer(t, Config{ReplaySize: 8}, nil)
			h := ts.hub
			for i := range 30 {
				mustPublish(t, h, TypeObject, i)
			}
			c := dial(t, ts.wsURL(fmt.Sprintf("since=%d", tt.since)), nil)
			from := tt.since + 1
			if tt.wantSnapshot {
				m := mustRead(t, c)
				if m.Type != TypeSnapshot || m.Seq != 30 {
					t.Fatalf("first message %s seq %d, want snapshot seq 30", m.Type, m.Seq)
				}
				from = 31
			}
			expectSeqs(t, c, from, 30)
			waitFor(t, "subscribed", func() bool { return h.Stats().Subscribers == 1 })
			seq := mustPublish(t, h, TypeObject, "live")
			expectSeqs(t, c, seq, seq) // nothing else was queued in between
		})
	}
}

// Messages published while Snapshot runs follow the snapshot; none is lost.
func TestSnapshotThenPublishedDuringSnapshot(t *testing.T) {
	var hp atomic.Pointer[Hub]
	var calls atomic.Int32
	ts := newTestServer(t, Config{Snapshot: func(ctx context.Context) (any, error) {
		calls.Add(1)
		for i := range 3 {
			if _, err := hp.Load().Publish(TypeObject, i); err != nil {
				return nil, err
			}
		}
		return map[string]string{"state": "s"}, nil
	}}, nil)
	h := ts.hub
	hp.Store(h)
	for i := range 4 {
		mustPublish(t, h, TypeObject, i)
	}
	c := dial(t, ts.url, nil)
	m := mustRead(t, c)
	if m.Type != TypeSnapshot || m.Seq != 4 || string(m.Data) != `{"state":"s"}` {
		t.Fatalf("first message %+v (data %s), want snapshot seq 4", m, m.Data)
	}
	expectSeqs(t, c, 5, 7)
	seq := mustPublish(t, h, TypeObject, "live")
	expectSeqs(t, c, seq, seq)
	if n := calls.Load(); n != 1 {
		t.Fatalf("Snapshot called %d times", n)
	}
}

// If more messages than the ring holds are published while a snapshot is
// taken, the hub takes another one instead of leaving a gap.
func TestSnapshotRetriedWhenRingOverruns(t *testing.T) {
	var hp atomic.Pointer[Hub]
	var calls atomic.Int32
	ts := newTestServer(t, Config{ReplaySize: 4, Snapshot: func(ctx context.Context) (any, error) {
		if calls.Add(1) == 1 {
			for i := range 10 {
				if _, err := hp.Load().Publish(TypeObject, i); err != nil {
					return nil, err
				}
			}
		}
		return "state", nil
	}}, nil)
	h := ts.hub
	hp.Store(h)
	c := dial(t, ts.url, nil)
	m := mustRead(t, c)
	if m.Type != TypeSnapshot || m.Seq != 10 {
		t.Fatalf("first message %s seq %d, want snapshot seq 10", m.Type, m.Seq)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("Snapshot called %d times, want 2", n)
	}
	seq := mustPublish(t, h, TypeObject, "live")
	expectSeqs(t, c, seq, seq)
}

// Clients connecting while messages are being published see a snapshot
// consistent with its seq and then every later message exactly once.
func TestSnapshotLiveConsistencyUnderPublishing(t *testing.T) {
	const (
		clients = 30
		perDial = 20
	)
	var (
		stateMu sync.Mutex
		state   uint64 // the lab's "state": the last value published
	)
	ts := newTestServer(t, Config{
		QueueSize: 2 * clients * perDial, // more than will ever be published: no drops
		Snapshot: func(ctx context.Context) (any, error) {
			runtime.Gosched() // widen the window in which publishes race the snapshot
			stateMu.Lock()
			defer stateMu.Unlock()
			return state, nil
		},
	}, nil)
	h := ts.hub
	publish := func(typ string) uint64 {
		stateMu.Lock()
		defer stateMu.Unlock()
		state++
		seq := mustPublish(t, h, typ, state) // data == seq: one publisher
		if seq != state {
			t.Fatalf("seq %d != state %d", seq, state)
		}
		return seq
	}

	var wg sync.WaitGroup
	for i := range clients {
		c := make(chan *websocket.Conn, 1)
		go func() {
			conn, err := dialErr(ts.url, nil)
			if err != nil {
				t.Errorf("dial: %v", err)
			}
			c <- conn
		}()
		for range perDial { // publish while that client connects
			publish(TypeObject)
		}
		conn := <-c
		if conn == nil {
			continue
		}
		t.Cleanup(func() { _ = conn.CloseNow() })
		wg.Go(func() {
			m, err := readMsg(conn)
			if err != nil || m.Type != TypeSnapshot {
				t.Errorf("client %d: first %+v, %v", i, m, err)
				return
			}
			var v uint64
			if err := json.Unmarshal(m.Data, &v); err != nil || v < m.Seq {
				t.Errorf("client %d: snapshot seq %d has state %s; it must include every message <= its seq", i, m.Seq, m.Data)
				return
			}
			last := m.Seq
			for {
				m, err := readMsg(conn)
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				if m.Seq != last+1 {
					t.Errorf("client %d: seq %d after %d", i, m.Seq, last)
					return
				}
				var d uint64
				if err := json.Unmarshal(m.Data, &d); err != nil || d != m.Seq {
					t.Errorf("client %d: seq %d data %s", i, m.Seq, m.Data)
					return
				}
				last = m.Seq
				if m.Type == "end" {
					return
				}
			}
		})
	}
	waitFor(t, "all subscribed", func() bool { return h.Stats().Subscribers == clients })
	publish("end")
	wg.Wait()
	if st := h.Stats(); st.Dropped != 0 {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestCloseSendsBye(t *testing.T) {
	ts := newTestServer(t, Config{}, nil)
	h := ts.hub
	conns := []*websocket.Conn{dial(t, ts.url, nil), dial(t, ts.url, nil), dial(t, ts.url, nil)}
	waitFor(t, "all subscribed", func() bool { return h.Stats().Subscribers == len(conns) })
	for i := range 5 {
		mustPublish(t, h, TypeFlow, i)
	}

	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		closed <- h.Close(ctx)
	}()
	for i, c := range conns {
		if m := mustRead(t, c); m.Type != TypeSnapshot {
			t.Fatalf("client %d: first %s", i, m.Type)
		}
		expectSeqs(t, c, 1, 5) // everything published before Close
		m := mustRead(t, c)
		if m.Type != TypeBye || m.Seq != 5 || !strings.Contains(string(m.Data), "shutting down") {
			t.Fatalf("client %d: got %+v (data %s), want bye seq 5", i, m, m.Data)
		}
		_, err := readMsg(c)
		if got := websocket.CloseStatus(err); got != websocket.StatusGoingAway {
			t.Fatalf("client %d: close status %d (%v), want 1001", i, got, err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if st := h.Stats(); st.Connections != 0 || st.Subscribers != 0 {
		t.Fatalf("after Close: %+v", st)
	}
	if _, err := h.Publish(TypeFlow, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close: %v", err)
	}
	resp, err := http.Get(ts.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("GET after Close: %d, want 503", resp.StatusCode)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// A client still waiting for its snapshot gets bye too, and Close does not
// wait for a Snapshot that honours its context.
func TestCloseDuringSnapshot(t *testing.T) {
	entered := make(chan struct{})
	ts := newTestServer(t, Config{Snapshot: func(ctx context.Context) (any, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	}}, nil)
	c := dial(t, ts.url, nil)
	<-entered
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		closed <- ts.hub.Close(ctx)
	}()
	if m := mustRead(t, c); m.Type != TypeBye {
		t.Fatalf("got %s, want bye", m.Type)
	}
	if _, err := readMsg(c); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("read after bye: %v, want 1001", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// When Close's context ends first, connections are torn down anyway.
func TestCloseDeadlineTearsDown(t *testing.T) {
	ts := newTestServer(t, Config{QueueSize: 1024, WriteTimeout: time.Hour},
		func(l net.Listener) net.Listener { return smallBufListener{l, 4096} })
	h := ts.hub
	dial(t, ts.url, smallReadBufClient(4096)) // never reads
	waitFor(t, "subscribed", func() bool { return h.Stats().Subscribers == 1 })
	payload := strings.Repeat("y", 4096)
	for range 100 { // far more than the kernel buffers hold: the writer stalls
		mustPublish(t, h, TypeTrace, payload)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	waitFor(t, "connections torn down", func() bool { return h.Stats().Connections == 0 })
	if err := h.Close(context.Background()); err != nil {
		t.Fatalf("Close after teardown: %v", err)
	}
}

func TestPingDropsDeadConnection(t *testing.T) {
	const (
		interval = 15 * time.Second
		timeout  = 10 * time.Second
	)
	newHub := func(t *testing.T) (*testServer, *clocktesting.FakeClock) {
		fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		return newTestServer(t, Config{Clock: fc, PingInterval: interval, PongTimeout: timeout}, nil), fc
	}
	// readLoop reads (and thereby answers pings) until the connection ends.
	readLoop := func(c *websocket.Conn) (<-chan Message, <-chan error) {
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
		return msgs, errc
	}

	t.Run("answering client stays", func(t *testing.T) {
		ts, fc := newHub(t)
		c := dial(t, ts.url, nil)
		msgs, errc := readLoop(c)
		waitFor(t, "subscribed", func() bool { return ts.hub.Stats().Subscribers == 1 })
		s := ts.hub.onlySub(t)
		for round := uint64(1); round <= 3; round++ {
			waitFor(t, "ping timer armed", func() bool { return fc.Waiters() == 1 })
			fc.Step(interval)
			waitFor(t, "pong", func() bool { return s.pongs.Load() == round })
		}
		fc.Step(timeout) // no ping outstanding: nothing happens
		seq := mustPublish(t, ts.hub, TypeTrace, "still here")
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
		if st := ts.hub.Stats(); st.Subscribers != 1 {
			t.Fatalf("Stats = %+v", st)
		}
	})

	t.Run("silent client dropped", func(t *testing.T) {
		ts, fc := newHub(t)
		c := dial(t, ts.url, &websocket.DialOptions{
			OnPingReceived: func(context.Context, []byte) bool { return false }, // never pong
		})
		_, errc := readLoop(c)
		waitFor(t, "subscribed", func() bool { return ts.hub.Stats().Subscribers == 1 })
		waitFor(t, "ping timer armed", func() bool { return fc.Waiters() == 1 })
		fc.Step(interval) // ping sent
		waitFor(t, "pong deadline armed", func() bool { return fc.Waiters() == 1 })
		fc.Step(timeout) // no pong by then
		select {
		case err := <-errc:
			if websocket.CloseStatus(err) != -1 {
				t.Fatalf("got close frame %v; a dead peer is dropped without one", err)
			}
		case <-time.After(guard):
			t.Fatal("connection not dropped")
		}
		waitFor(t, "unsubscribed", func() bool { return ts.hub.Stats().Connections == 0 })
	})
}

// The protocol is server-to-client only: a client data message gets 1008.
func TestClientMessageRejected(t *testing.T) {
	ts := newTestServer(t, Config{}, nil)
	c := dial(t, ts.url, nil)
	mustRead(t, c) // snapshot
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"hello":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := readMsg(c); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("read: %v, want 1008", err)
	}
	waitFor(t, "unsubscribed", func() bool { return ts.hub.Stats().Connections == 0 })
}
