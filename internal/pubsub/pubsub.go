package pubsub

import "sync"

// Broadcaster fans values of type T out to subscribers. The zero value is
// ready to use; it is safe for concurrent use.
type Broadcaster[T any] struct {
	// Copy, when set, gives every subscriber its own copy of a value (for
	// values holding slices a subscriber might keep). Set it before first use.
	Copy func(T) T

	// mu is held while numbering and sending, so every subscriber sees
	// values in the order (and sequence) they were published.
	mu   sync.Mutex
	seq  uint64
	next int
	subs map[int]chan T
}

// Subscribe returns a channel with room for buf values (at least 1) and a
// cancel func that unsubscribes and closes the channel; cancel may be called
// more than once. Values published while the channel is full are lost for
// this subscriber.
func (b *Broadcaster[T]) Subscribe(buf int) (<-chan T, func()) {
	ch := make(chan T, max(buf, 1))
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[int]chan T{}
	}
	id := b.next
	b.next++
	b.subs[id] = ch
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, id)
			close(ch)
			b.mu.Unlock()
		})
	}
}

// Publish sends v to every subscriber that has room, without blocking.
func (b *Broadcaster[T]) Publish(v T) {
	b.PublishSeq(func(uint64) T { return v })
}

// PublishSeq numbers the next value (1, 2, 3, ... without gaps, counted
// over every call to Publish and PublishSeq), builds it with build and
// sends it like Publish. A subscriber that sees a gap missed values.
func (b *Broadcaster[T]) PublishSeq(build func(seq uint64) T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	v := build(b.seq)
	for _, ch := range b.subs {
		w := v
		if b.Copy != nil {
			w = b.Copy(v)
		}
		select {
		case ch <- w:
		default: // full: this subscriber misses v; the others do not wait
		}
	}
}

// Subscribers is how many subscriptions are open.
func (b *Broadcaster[T]) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}
