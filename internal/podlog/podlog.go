package podlog

import (
	"context"
	"io"
	"sync"
	"time"
)

// DefaultLimit is the byte limit of a buffer whose producer set none.
const DefaultLimit = 64 << 10

// Store holds every buffer. The zero value is not usable; call New.
type Store struct {
	mu      sync.Mutex
	bufs    map[string]*buffer
	limits  map[string]int
	dflt    int
	maxBufs int
}

// New returns a store whose buffers keep limit bytes each unless SetLimit
// says otherwise, and which holds at most maxBuffers buffers (appends to a
// new key beyond that are dropped, so a flood of keys cannot grow memory).
func New(limit, maxBuffers int) *Store {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if maxBuffers <= 0 {
		maxBuffers = 4096
	}
	return &Store{bufs: map[string]*buffer{}, limits: map[string]int{}, dflt: limit, maxBufs: maxBuffers}
}

// SetLimit sets key's byte limit (before or after its first line).
func (s *Store) SetLimit(key string, limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits[key] = limit
	if b := s.bufs[key]; b != nil {
		b.mu.Lock()
		b.limit = limit
		b.trim()
		b.mu.Unlock()
	}
}

// Line is one log line.
type Line struct {
	Time time.Time
	Text string // without the trailing newline
	seq  uint64
}

type buffer struct {
	mu      sync.Mutex
	limit   int
	lines   []Line // oldest first
	bytes   int
	nextSeq uint64
	// changed is closed and replaced on every append; ended is closed and
	// replaced by End. Followers wait on both.
	changed chan struct{}
	ended   chan struct{}
}

func (b *buffer) trim() {
	drop := 0
	for b.bytes > b.limit && drop < len(b.lines) {
		b.bytes -= len(b.lines[drop].Text) + 1
		drop++
	}
	if drop > 0 {
		// Reslice past the dropped lines, cleared so their strings are
		// freed: a full buffer drops a line on every append, and copying
		// the rest down each time made a busy component's log cost O(n)
		// per line (a third of a 1,000-node run's logging CPU). append
		// moves the live lines to a fresh array once the capacity behind
		// them runs out, so the array does not creep forward forever.
		clear(b.lines[:drop])
		b.lines = b.lines[drop:]
	}
}

func (s *Store) get(key string, create bool) *buffer {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bufs[key]
	if b == nil && create && len(s.bufs) < s.maxBufs {
		limit := s.dflt
		if l, ok := s.limits[key]; ok {
			limit = l
		}
		b = &buffer{limit: limit, changed: make(chan struct{}), ended: make(chan struct{})}
		s.bufs[key] = b
	}
	return b
}

// Append adds one line at t.
func (s *Store) Append(key string, t time.Time, text string) {
	b := s.get(key, true)
	if b == nil {
		return
	}
	b.mu.Lock()
	b.nextSeq++
	b.lines = append(b.lines, Line{Time: t, Text: text, seq: b.nextSeq})
	b.bytes += len(text) + 1
	b.trim()
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// End ends every follower of key (they return once they have written what
// is there) but keeps its lines: a static Pod's mirror Pod that is replaced
// keeps its container's log, as the container itself lives on.
func (s *Store) End(key string) {
	if b := s.get(key, false); b != nil {
		b.mu.Lock()
		close(b.ended)
		b.ended = make(chan struct{})
		b.mu.Unlock()
	}
}

// Remove ends key's followers and drops its lines.
func (s *Store) Remove(key string) {
	s.mu.Lock()
	b := s.bufs[key]
	delete(s.bufs, key)
	delete(s.limits, key)
	s.mu.Unlock()
	if b != nil {
		b.mu.Lock()
		close(b.ended)
		b.ended = make(chan struct{})
		b.mu.Unlock()
	}
}

// Bytes is how many bytes key's buffer holds now.
func (s *Store) Bytes(key string) int {
	b := s.get(key, false)
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bytes
}

// Options select what Read writes, with kubectl logs' meanings.
type Options struct {
	// TailLines, when >= 0, starts at that many lines from the end.
	TailLines int
	// Since drops lines older than it (zero: none dropped).
	Since time.Time
	// Timestamps prefixes each line with its RFC 3339 time, as the
	// kubelet does.
	Timestamps bool
	// LimitBytes stops after that many bytes (0: no limit).
	LimitBytes int64
	// Follow keeps writing new lines until ctx ends or End/Remove.
	Follow bool
}

// Lines returns a copy of key's lines, oldest first.
func (s *Store) Lines(key string) []Line {
	b := s.get(key, false)
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Line(nil), b.lines...)
}

// Read writes key's lines selected by o to w. With Follow it returns when
// ctx ends, the buffer is ended or removed, or a write fails; flush (may be
// nil) is called after each batch so a follower sees lines as they come.
func (s *Store) Read(ctx context.Context, key string, o Options, w io.Writer, flush func()) error {
	b := s.get(key, o.Follow)
	if b == nil {
		return nil
	}
	var written int64
	write := func(l Line) (bool, error) {
		if !o.Since.IsZero() && l.Time.Before(o.Since) {
			return true, nil
		}
		text := l.Text + "\n"
		if o.Timestamps {
			text = l.Time.UTC().Format(time.RFC3339Nano) + " " + text
		}
		if o.LimitBytes > 0 && written+int64(len(text)) > o.LimitBytes {
			text = text[:o.LimitBytes-written]
			_, err := io.WriteString(w, text)
			return false, err
		}
		n, err := io.WriteString(w, text)
		written += int64(n)
		return err == nil, err
	}

	b.mu.Lock()
	batch := b.lines
	if o.TailLines >= 0 && o.TailLines < len(batch) {
		batch = batch[len(batch)-o.TailLines:]
	}
	batch = append([]Line(nil), batch...)
	last := b.nextSeq
	changed, ended := b.changed, b.ended
	b.mu.Unlock()
	for {
		for _, l := range batch {
			if ok, err := write(l); !ok || err != nil {
				return err
			}
		}
		if flush != nil {
			flush()
		}
		if !o.Follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ended:
			return nil
		case <-changed:
		}
		b.mu.Lock()
		batch = batch[:0]
		for _, l := range b.lines {
			if l.seq > last {
				batch = append(batch, l)
			}
		}
		last = b.nextSeq
		changed = b.changed
		if b.ended != ended {
			// Ended between the wake-up and now: write what came, then stop.
			o.Follow = false
		}
		b.mu.Unlock()
	}
}

// StaticKey is the key of a static Pod's container: the lab's control-plane
// components and CCM, whose logs outlive their mirror Pods.
func StaticKey(container string) string { return "static/" + container }

// PodKey is the key of an ordinary Pod's container; a Pod recreated under
// the same name has a new UID and so a new, empty log.
func PodKey(uid, container string) string { return uid + "/" + container }
