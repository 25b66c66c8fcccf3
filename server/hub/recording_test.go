package hub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// recLab is a tiny lab for the recording tests: its state is the last
// value published, and history[seq] is the state right after seq.
type recLab struct {
	mu      sync.Mutex
	hub     *Hub
	state   int
	history map[uint64]int
}

func newRecLab(t *testing.T, cfg Config) *recLab {
	t.Helper()
	l := &recLab{history: map[uint64]int{0: 0}}
	cfg.Logger = testLogger()
	cfg.Snapshot = func(context.Context) (any, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.state, nil
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	l.hub = h
	return l
}

// set changes the state, then publishes it (the order Config.Snapshot
// asks for).
func (l *recLab) set(t *testing.T, v int) uint64 {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.state = v
	seq := mustPublish(t, l.hub, TypeObject, v)
	l.history[seq] = v
	return seq
}

type recLine struct {
	Seq  uint64          `json:"seq"`
	Type string          `json:"type"`
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data"`
}

func getRecording(t *testing.T, h *Hub, query string) (*httptest.ResponseRecorder, RecordingHeader, []recLine) {
	t.Helper()
	target := "/api/recording"
	if query != "" {
		target += "?" + query
	}
	rec := httptest.NewRecorder()
	h.ServeRecording(rec, httptest.NewRequest(http.MethodGet, target, nil))
	if rec.Code != http.StatusOK {
		return rec, RecordingHeader{}, nil
	}
	var lines []recLine
	sc := bufio.NewScanner(bytes.NewReader(rec.Body.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m recLine
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d is not an envelope: %v: %s", len(lines)+1, err, sc.Bytes())
		}
		lines = append(lines, m)
	}
	if len(lines) < 2 {
		t.Fatalf("recording has %d lines, want a header and a base at least:\n%s", len(lines), rec.Body.String())
	}
	var hd RecordingHeader
	if lines[0].Type != TypeRecording {
		t.Fatalf("first line is %q, want %q", lines[0].Type, TypeRecording)
	}
	if err := json.Unmarshal(lines[0].Data, &hd); err != nil {
		t.Fatalf("header: %v", err)
	}
	return rec, hd, lines[1:]
}

// replayCheck plays the recording as a player would and checks that it
// reconstructs the lab's state at every moment it covers.
func replayCheck(t *testing.T, l *recLab, hd RecordingHeader, lines []recLine) {
	t.Helper()
	base := lines[0]
	if base.Type != TypeSnapshot || base.Seq != hd.BaseSeq {
		t.Fatalf("second line %s seq %d, want the snapshot of seq %d", base.Type, base.Seq, hd.BaseSeq)
	}
	if hd.Version != RecordingVersion || hd.Frames != len(lines)-1 {
		t.Fatalf("header %+v for %d frames", hd, len(lines)-1)
	}
	var state int
	if err := json.Unmarshal(base.Data, &state); err != nil {
		t.Fatalf("base data: %v", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Like a live client's snapshot, a base reflects every message up to
	// its seq and may already reflect later ones (it is taken while the
	// lab goes on); it is never older than its seq.
	baseOK := false
	for s := base.Seq; s <= hd.LastSeq; s++ {
		baseOK = baseOK || l.history[s] == state
	}
	if !baseOK {
		t.Fatalf("base at seq %d holds %d, which the lab never held from then on", base.Seq, state)
	}
	prev, prevTime := base.Seq, base.Time
	for _, m := range lines[1:] {
		if m.Seq != prev+1 {
			t.Fatalf("frame seq %d after %d: a gap", m.Seq, prev)
		}
		if m.Time.Before(prevTime) {
			t.Fatalf("frame %d time %v before %v", m.Seq, m.Time, prevTime)
		}
		if err := json.Unmarshal(m.Data, &state); err != nil {
			t.Fatalf("frame %d: %v", m.Seq, err)
		}
		if want := l.history[m.Seq]; state != want {
			t.Fatalf("after seq %d the replay holds %d, the lab held %d", m.Seq, state, want)
		}
		prev, prevTime = m.Seq, m.Time
	}
	if prev != hd.LastSeq {
		t.Fatalf("last frame %d, header says %d", prev, hd.LastSeq)
	}
}

func TestRecordingReconstructsEveryMoment(t *testing.T) {
	l := newRecLab(t, Config{Epoch: "run-1", RecordEvery: 8, ReplaySize: 64})
	for i := 1; i <= 20; i++ {
		l.set(t, i*10)
	}
	rec, hd, lines := getRecording(t, l.hub, "")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type %q", ct)
	}
	if cd := rec.Header().Get("Content-Disposition"); !strings.Contains(cd, "ccmlab-recording-run-1.ndjson") {
		t.Fatalf("Content-Disposition %q", cd)
	}
	if hd.Epoch != "run-1" || hd.LastSeq != 20 {
		t.Fatalf("header %+v", hd)
	}
	replayCheck(t, l, hd, lines)
}

// Before any base was taken (a quiet lab), asking for the recording takes
// one, so there is always a moment to show.
func TestRecordingOfQuietLab(t *testing.T) {
	l := newRecLab(t, Config{RecordEvery: 4, ReplaySize: 16})
	_, hd, lines := getRecording(t, l.hub, "")
	if hd.BaseSeq != 0 || hd.LastSeq != 0 || len(lines) != 1 {
		t.Fatalf("header %+v, %d lines", hd, len(lines))
	}
	replayCheck(t, l, hd, lines)
}

// The recording stays within the ring and still spans at least
// ReplaySize-RecordEvery frames, however much was published.
func TestRecordingBounds(t *testing.T) {
	const ring, every = 32, 8
	l := newRecLab(t, Config{RecordEvery: every, ReplaySize: ring})
	for i := 1; i <= 500; i++ {
		seq := l.set(t, i)
		// Let each base in before the frames that would need the next one,
		// so the test sees the steady state rather than a slow goroutine.
		waitFor(t, "a recent base", func() bool {
			l.hub.mu.Lock()
			defer l.hub.mu.Unlock()
			n := len(l.hub.bases)
			return n > 0 && seq-l.hub.bases[n-1].seq < every
		})
		if i%37 != 0 && i != 500 {
			continue
		}
		_, hd, lines := getRecording(t, l.hub, "")
		if n := hd.Frames; (seq >= ring && n < ring-every) || n > ring {
			t.Fatalf("after %d frames the recording holds %d, want %d…%d", seq, n, ring-every, ring)
		}
		replayCheck(t, l, hd, lines)
		l.hub.mu.Lock()
		if n := len(l.hub.bases); n > ring/every+1 {
			t.Fatalf("%d bases kept, want at most %d", n, ring/every+1)
		}
		l.hub.mu.Unlock()
	}
}

func TestRecordingSince(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	l := newRecLab(t, Config{RecordEvery: 4, ReplaySize: 64, Clock: clk})
	// Bases are taken at seq 1 (the first frame) and then every 4 frames.
	baseTimes := map[uint64]time.Time{}
	var last time.Time
	for i := 1; i <= 20; i++ {
		clk.Step(time.Second)
		seq := l.set(t, i)
		last = clk.Now()
		if (seq-1)%4 == 0 {
			waitFor(t, "base", func() bool {
				l.hub.mu.Lock()
				defer l.hub.mu.Unlock()
				return len(l.hub.bases) > 0 && l.hub.bases[len(l.hub.bases)-1].seq == seq
			})
			baseTimes[seq] = clk.Now()
		}
	}
	tests := []struct {
		name     string
		query    string
		wantBase uint64
	}{
		{"all", "", 1},
		{"seq between bases", "since=11", 9},
		{"seq on a base", "since=13", 13},
		{"seq before every base", "since=0", 1},
		{"seq after the last", "since=999", 17},
		{"time", "since=" + baseTimes[13].Add(500*time.Millisecond).Format(time.RFC3339Nano), 13},
		{"time before every base", "since=2000-01-01T00:00:00Z", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, hd, lines := getRecording(t, l.hub, tt.query)
			if hd.BaseSeq != tt.wantBase {
				t.Fatalf("base %d, want %d", hd.BaseSeq, tt.wantBase)
			}
			if !hd.From.Equal(baseTimes[tt.wantBase]) || !hd.To.Equal(last) {
				t.Fatalf("header times %v…%v", hd.From, hd.To)
			}
			replayCheck(t, l, hd, lines)
		})
	}
}

func TestRecordingBadRequests(t *testing.T) {
	l := newRecLab(t, Config{RecordEvery: 4, ReplaySize: 16})
	l.set(t, 1)
	for _, q := range []string{"since=", "since=-1", "since=abc", "since=1&since=2", "since=1e3", "since=0x10", "since=+1", "since=2026-13-01T00:00:00Z", "since=%zz"} {
		t.Run(q, func(t *testing.T) {
			rec, _, _ := getRecording(t, l.hub, q)
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), msgBadRecordingSince) {
				t.Fatalf("%s: %d %s", q, rec.Code, rec.Body)
			}
		})
	}
	t.Run("no recording", func(t *testing.T) {
		h, err := New(Config{Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = h.Close(context.Background()) }()
		rec, _, _ := getRecording(t, h, "")
		if rec.Code != http.StatusNotFound {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})
}

func TestRecordEveryValidated(t *testing.T) {
	for _, c := range []Config{{RecordEvery: -1}, {ReplaySize: 16, RecordEvery: 9}} {
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), "RecordEvery") {
			t.Errorf("New(%+v) = %v, want a RecordEvery error", c, err)
		}
	}
}
