package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

// The recording is the hub's bounded history as a player can use it: a
// base snapshot and every frame published after it. Bases are taken every
// Config.RecordEvery frames (in a goroutine of their own, so Publish never
// waits for a snapshot) and a base is kept while the replay ring still
// holds every frame after it; the oldest such base starts the recording.
// With RecordEvery ≤ ReplaySize/2 the recording therefore always spans at
// least ReplaySize−RecordEvery frames (once that many were published) and
// at most ReplaySize, plus one snapshot per kept base in memory.

// TypeRecording is the first line of a recording: what it holds.
const TypeRecording = "recording"

// RecordingVersion is the version of the recording format
// (docs/protocol.md, "Recordings").
const RecordingVersion = 1

// baseRetry is how long the hub waits before it tries again to take a
// base after Snapshot failed (e.g. while the lab is starting).
const baseRetry = time.Second

const msgBadRecordingSince = "since must be a non-negative integer (a seq) or an RFC 3339 time"

// RecordingHeader is the data of a recording's first line.
type RecordingHeader struct {
	Version int `json:"version"`
	// Epoch is the run of the lab the recording comes from.
	Epoch string `json:"epoch,omitempty"`
	// BaseSeq is the seq of the base snapshot (the second line); LastSeq
	// the seq of the last frame. The frames BaseSeq+1 … LastSeq follow the
	// base, in order, without gaps.
	BaseSeq uint64 `json:"baseSeq"`
	LastSeq uint64 `json:"lastSeq"`
	// From and To are the times of the base and of the last frame.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Frames counts the lines after the base.
	Frames int `json:"frames"`
}

// recordingOn reports whether the hub keeps a recording.
func (h *Hub) recordingOn() bool { return h.cfg.RecordEvery > 0 }

// maybeBaseLocked starts taking a new base when the newest one is
// RecordEvery frames old (or there is none). h.mu must be held.
func (h *Hub) maybeBaseLocked() {
	if !h.recordingOn() || h.basing || h.closed {
		return
	}
	if n := len(h.bases); n > 0 && h.seq-h.bases[n-1].seq < uint64(h.cfg.RecordEvery) {
		return
	}
	if !h.baseFailed.IsZero() && h.clk.Since(h.baseFailed) < baseRetry {
		return
	}
	h.basing = true
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		_, err := h.takeBase(h.closingCtx)
		h.mu.Lock()
		h.basing = false
		if err != nil {
			h.baseFailed = h.clk.Now()
		} else {
			h.baseFailed = time.Time{}
		}
		h.mu.Unlock()
		if err != nil && !errors.Is(err, ErrClosed) && h.closingCtx.Err() == nil {
			h.log.Debug("hub: cannot take a recording base; will retry", "err", err)
		}
	}()
}

// StartRecording takes a base now, so that the recording starts here. The
// lab calls it once it is ready: until then Snapshot fails, and a failed
// attempt is only retried baseRetry later, on the next Publish. A student
// quick enough to run a Service's whole flow within that second would
// otherwise download a recording whose base was taken at the download,
// after the flow: a header and a snapshot, nothing to replay. It does
// nothing on a hub without a recording.
func (h *Hub) StartRecording(ctx context.Context) error {
	if !h.recordingOn() {
		return nil
	}
	_, err := h.takeBase(ctx)
	return err
}

// takeBase takes a snapshot consistent with the seq it is stamped with
// (the rule register follows) and keeps it as the newest base.
func (h *Hub) takeBase(ctx context.Context) (*frame, error) {
	qtyp, _ := json.Marshal(TypeSnapshot)
	for range snapshotAttempts {
		// The base's time is read with its seq, under the lock Publish
		// stamps frames under: read after it, a frame published in
		// between (seq s0+1) would carry an earlier time than its base,
		// and the recording would run backwards (replay.Check refuses it).
		h.mu.Lock()
		s0, closed, at := h.seq, h.closed, h.clk.Now()
		h.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		var raw []byte
		if h.cfg.Snapshot != nil {
			v, err := h.cfg.Snapshot(ctx)
			if err != nil {
				return nil, fmt.Errorf("snapshot: %w", err)
			}
			if v != nil {
				if raw, err = json.Marshal(v); err != nil {
					return nil, fmt.Errorf("marshal snapshot: %w", err)
				}
			}
		}
		base := &frame{seq: s0, at: at, b: encodeFrame(s0, qtyp, at, raw)}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, ErrClosed
		}
		if h.ring.covers(s0, h.seq) {
			h.addBaseLocked(base)
			h.mu.Unlock()
			return base, nil
		}
		h.mu.Unlock()
	}
	return nil, fmt.Errorf("more than %d messages published during each of %d snapshots", h.cfg.ReplaySize, snapshotAttempts)
}

// addBaseLocked keeps b (in seq order) and forgets the bases whose frames
// the ring no longer holds. h.mu must be held.
func (h *Hub) addBaseLocked(b *frame) {
	n := len(h.bases)
	switch {
	case n == 0 || b.seq > h.bases[n-1].seq:
		h.bases = append(h.bases, b)
	case b.seq == h.bases[n-1].seq:
		h.bases[n-1] = b // a newer view of the same moment
	default:
		// Taken concurrently with a newer one; the newer one will do.
	}
	h.pruneBasesLocked()
}

func (h *Hub) pruneBasesLocked() {
	i := 0
	for i < len(h.bases) && !h.ring.covers(h.bases[i].seq, h.seq) {
		i++
	}
	if i > 0 {
		h.bases = append(h.bases[:0], h.bases[i:]...)
	}
}

// recordingSince selects where a recording starts.
type recordingSince struct {
	seq  uint64
	time time.Time
	set  bool
}

// parseRecordingSince reads ?since= as a seq (all digits) or an RFC 3339
// time.
func parseRecordingSince(rawQuery string) (recordingSince, error) {
	bad := errors.New(msgBadRecordingSince)
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return recordingSince{}, bad
	}
	vs, ok := vals["since"]
	if !ok {
		return recordingSince{}, nil
	}
	if len(vs) != 1 || vs[0] == "" {
		return recordingSince{}, bad
	}
	v := vs[0]
	if v[0] >= '0' && v[0] <= '9' && len(v) <= 20 {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			return recordingSince{seq: n, set: true}, nil
		}
	}
	tm, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return recordingSince{}, bad
	}
	return recordingSince{time: tm, set: true}, nil
}

// Recording returns the recording's frames: the header line, the base
// snapshot, then every frame after it. Without since it starts at the
// oldest base kept; with since, at the newest base at or before it (by seq
// or by time), or the oldest when none is that old. When no base is kept
// yet, one is taken now.
func (h *Hub) recording(ctx context.Context, since recordingSince) ([][]byte, error) {
	if !h.recordingOn() {
		return nil, errors.New("hub: this hub keeps no recording")
	}
	for attempt := 0; ; attempt++ {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, ErrClosed
		}
		h.pruneBasesLocked()
		if len(h.bases) > 0 {
			out := h.recordingLocked(since)
			h.mu.Unlock()
			return out, nil
		}
		h.mu.Unlock()
		if attempt > 0 {
			return nil, errors.New("hub: no recording base could be kept")
		}
		if _, err := h.takeBase(ctx); err != nil {
			return nil, err
		}
	}
}

func (h *Hub) recordingLocked(since recordingSince) [][]byte {
	base := h.bases[0]
	if since.set {
		for _, b := range h.bases {
			if (since.time.IsZero() && b.seq <= since.seq) || (!since.time.IsZero() && !b.at.After(since.time)) {
				base = b
			}
		}
	}
	frames := h.ring.after(base.seq, h.seq)
	hd := RecordingHeader{
		Version: RecordingVersion, Epoch: h.cfg.Epoch,
		BaseSeq: base.seq, LastSeq: h.seq, From: base.at.UTC(), To: base.at.UTC(), Frames: len(frames),
	}
	if len(frames) > 0 {
		hd.To = frames[len(frames)-1].at.UTC()
	}
	raw, _ := json.Marshal(hd) // plain fields always marshal
	qtyp, _ := json.Marshal(TypeRecording)
	out := make([][]byte, 0, len(frames)+2)
	out = append(out, encodeFrame(h.seq, qtyp, h.clk.Now(), raw), base.b)
	for _, f := range frames {
		out = append(out, f.b)
	}
	return out
}

// ServeRecording answers GET /api/recording: the recording as NDJSON, one
// envelope per line (docs/protocol.md, "Recordings"). A malformed since is
// answered 400 and a hub without a recording 404, both as JSON errors.
func (h *Hub) ServeRecording(w http.ResponseWriter, r *http.Request) {
	since, err := parseRecordingSince(r.URL.RawQuery)
	if err != nil {
		httpguard.WriteError(w, http.StatusBadRequest, msgBadRecordingSince)
		return
	}
	if !h.recordingOn() {
		httpguard.WriteError(w, http.StatusNotFound, "this lab keeps no recording")
		return
	}
	lines, err := h.recording(r.Context(), since)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			w.Header().Set("Retry-After", "1")
			httpguard.WriteError(w, http.StatusServiceUnavailable, "hub is shutting down")
			return
		}
		h.log.Warn("hub: recording failed", "err", err)
		w.Header().Set("Retry-After", "1")
		httpguard.WriteError(w, http.StatusServiceUnavailable, "no recording yet: "+err.Error())
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/x-ndjson")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	name := "ccmlab-recording.ndjson"
	if safeName(h.cfg.Epoch) {
		name = "ccmlab-recording-" + h.cfg.Epoch + ".ndjson"
	}
	hd.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, l := range lines {
		_, _ = bw.Write(l)
		_ = bw.WriteByte('\n')
	}
	_ = bw.Flush()
}

// safeName reports whether s may go into a Content-Disposition filename
// as it is.
func safeName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
