package pubsub

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func drain[T any](ch <-chan T) []T {
	var out []T
	for {
		select {
		case v, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, v)
		default:
			return out
		}
	}
}

func TestPublish(t *testing.T) {
	cases := []struct {
		name string
		buf  int
		sent []int
		want []int
	}{
		{"fits", 4, []int{1, 2, 3}, []int{1, 2, 3}},
		{"full drops the newest", 2, []int{1, 2, 3, 4}, []int{1, 2}},
		{"buf below one means one", 0, []int{1, 2}, []int{1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b Broadcaster[int]
			ch, cancel := b.Subscribe(c.buf)
			defer cancel()
			for _, v := range c.sent {
				b.Publish(v)
			}
			if got := drain(ch); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestSlowSubscriberDoesNotBlockOthers(t *testing.T) {
	var b Broadcaster[uint64]
	slow, cancelSlow := b.Subscribe(1)
	defer cancelSlow()
	fast, cancelFast := b.Subscribe(100)
	defer cancelFast()

	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			b.PublishSeq(func(seq uint64) uint64 { return seq })
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish blocked on a full subscriber")
	}
	if got := drain(fast); len(got) != 50 || got[0] != 1 || got[49] != 50 {
		t.Errorf("fast subscriber got %d values (%v...), want 1..50", len(got), got[:min(3, len(got))])
	}
	// The slow one kept the first and can see the gap after it.
	if got := drain(slow); !slices.Equal(got, []uint64{1}) {
		t.Errorf("slow subscriber got %v, want [1]", got)
	}
}

func TestSequenceWithoutGaps(t *testing.T) {
	var b Broadcaster[uint64]
	ch, cancel := b.Subscribe(1000)
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				if i%2 == 0 {
					b.PublishSeq(func(seq uint64) uint64 { return seq })
				} else {
					b.Publish(0) // counts too
				}
			}
		}()
	}
	wg.Wait()
	var seqs []uint64
	for _, v := range drain(ch) {
		if v != 0 {
			seqs = append(seqs, v)
		}
	}
	if len(seqs) != 200 || !slices.IsSorted(seqs) {
		t.Errorf("got %d numbered values, sorted %v; want 200 in order", len(seqs), slices.IsSorted(seqs))
	}
}

func TestCancel(t *testing.T) {
	var b Broadcaster[int]
	ch, cancel := b.Subscribe(1)
	if b.Subscribers() != 1 {
		t.Fatalf("Subscribers = %d, want 1", b.Subscribers())
	}
	cancel()
	cancel() // twice is fine
	if _, ok := <-ch; ok {
		t.Error("channel not closed by cancel")
	}
	b.Publish(1) // no subscriber: no panic on the closed channel
	if b.Subscribers() != 0 {
		t.Errorf("Subscribers = %d after cancel, want 0", b.Subscribers())
	}
}

func TestCopy(t *testing.T) {
	b := Broadcaster[[]int]{Copy: slices.Clone[[]int]}
	a, cancelA := b.Subscribe(1)
	defer cancelA()
	c, cancelC := b.Subscribe(1)
	defer cancelC()
	b.Publish([]int{1})
	x, y := <-a, <-c
	x[0] = 9
	if y[0] != 1 {
		t.Error("subscribers share one value despite Copy")
	}
}
