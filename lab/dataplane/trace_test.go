package dataplane

import (
	"fmt"
	"testing"
)

func TestTraceRing(t *testing.T) {
	l := newTraceLog(3)
	if got := l.list(); len(got) != 0 {
		t.Fatalf("empty log lists %d", len(got))
	}
	for i := range 5 {
		l.add(Trace{ID: fmt.Sprint(i), Hops: []Hop{{Kind: HopClient}}})
	}
	got := l.list()
	if len(got) != 3 || got[0].ID != "2" || got[2].ID != "4" {
		t.Fatalf("ring = %+v, want IDs 2,3,4", got)
	}
	got[0].Hops[0].Kind = "changed"
	if l.list()[0].Hops[0].Kind != HopClient {
		t.Error("list shares hops with the log")
	}
}

// TestTraceSubscribers: a full subscriber misses traces without blocking
// add or the other subscribers; cancel is idempotent and closes.
func TestTraceSubscribers(t *testing.T) {
	l := newTraceLog(8)
	slow, cancelSlow := l.subscribe(1)
	fast, cancelFast := l.subscribe(10)
	for i := range 3 {
		l.add(Trace{ID: fmt.Sprint(i)})
	}
	if got := len(fast); got != 3 {
		t.Errorf("fast subscriber got %d, want 3", got)
	}
	if got := (<-slow).ID; got != "0" || len(slow) != 0 {
		t.Errorf("slow subscriber got %q then %d more, want only the first", got, len(slow))
	}
	cancelSlow()
	cancelSlow()
	if _, ok := <-slow; ok {
		t.Error("channel open after cancel")
	}
	l.add(Trace{ID: "3"})
	cancelFast()
	n := 0
	for range fast {
		n++
	}
	if n != 4 {
		t.Errorf("fast subscriber drained %d, want 4", n)
	}
}
