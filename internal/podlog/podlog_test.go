package podlog

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	s := New(1<<10, 0)
	t0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	for i := range 5 {
		s.Append("k", t0.Add(time.Duration(i)*time.Minute), "line"+string(rune('0'+i)))
	}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"all", Options{TailLines: -1}, "line0\nline1\nline2\nline3\nline4\n"},
		{"tail 2", Options{TailLines: 2}, "line3\nline4\n"},
		{"tail 0", Options{TailLines: 0}, ""},
		{"since", Options{TailLines: -1, Since: t0.Add(3 * time.Minute)}, "line3\nline4\n"},
		{"timestamps", Options{TailLines: 1, Timestamps: true}, "2026-12-01T06:04:00Z line4\n"},
		{"limit bytes", Options{TailLines: -1, LimitBytes: 8}, "line0\nli"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := s.Read(context.Background(), "k", tc.o, &b, nil); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

func TestBounded(t *testing.T) {
	s := New(100, 2)
	for range 100 {
		s.Append("a", time.Now(), strings.Repeat("x", 19)) // 20 bytes a line
	}
	if got := s.Bytes("a"); got > 100 || got < 80 {
		t.Errorf("buffer holds %d bytes, want at most 100 and the newest lines", got)
	}
	s.Append("b", time.Now(), "b")
	s.Append("c", time.Now(), "c") // a third buffer is beyond maxBuffers
	if s.Bytes("c") != 0 {
		t.Error("a buffer beyond maxBuffers was created")
	}
	s.SetLimit("a", 40)
	if got := s.Bytes("a"); got > 40 {
		t.Errorf("after SetLimit(40) the buffer holds %d bytes", got)
	}
}

// pipe collects what a follower writes and tells when something came.
type pipe struct {
	ch chan string
}

func (p pipe) Write(b []byte) (int, error) { p.ch <- string(b); return len(b), nil }

func TestFollowEnds(t *testing.T) {
	for _, end := range []struct {
		name string
		do   func(*Store)
		kept bool
	}{
		{"End keeps the lines", func(s *Store) { s.End("k") }, true},
		{"Remove drops them", func(s *Store) { s.Remove("k") }, false},
	} {
		t.Run(end.name, func(t *testing.T) {
			s := New(1<<10, 0)
			s.Append("k", time.Now(), "first")
			p := pipe{ch: make(chan string, 16)}
			done := make(chan error, 1)
			go func() { done <- s.Read(context.Background(), "k", Options{TailLines: -1, Follow: true}, p, nil) }()
			if got := <-p.ch; got != "first\n" {
				t.Fatalf("first write %q", got)
			}
			s.Append("k", time.Now(), "second")
			if got := <-p.ch; got != "second\n" {
				t.Fatalf("followed write %q", got)
			}
			end.do(s)
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the follower did not end")
			}
			if kept := len(s.Lines("k")) > 0; kept != end.kept {
				t.Errorf("lines kept = %v, want %v", kept, end.kept)
			}
		})
	}
}

func TestFollowEndsWithContext(t *testing.T) {
	s := New(0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Read(ctx, "nothing yet", Options{TailLines: -1, Follow: true}, pipe{ch: make(chan string, 1)}, nil)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not end with its context")
	}
}

// BenchmarkAppendFull: a line appended to a full buffer (the steady state
// of a busy component's log), at 64 KiB and at 1 MiB. The cost per line
// must not grow with the buffer.
func BenchmarkAppendFull(b *testing.B) {
	line := strings.Repeat("x", 120)
	for _, limit := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("limit=%dKiB", limit>>10), func(b *testing.B) {
			s := New(limit, 1)
			now := time.Now()
			for range 2 * limit / len(line) {
				s.Append("k", now, line)
			}
			b.ResetTimer()
			for range b.N {
				s.Append("k", now, line)
			}
		})
	}
}
