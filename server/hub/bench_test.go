package hub

import (
	"context"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// BenchmarkFanout200 connects 200 WebSocket clients over loopback and
// measures, per published message, the time from Publish until all 200
// clients have read it (one message in flight at a time).
//
// Metrics: p50-ms and p99-ms of that latency; B/client, the live heap
// added per connected client (after GC, before vs after connecting and
// receiving the snapshot). Both ends live in this process, so B/client
// counts the client's connection state as well as the hub's;
// stack-B/client does the same for goroutine stacks.
func BenchmarkFanout200(b *testing.B) {
	const clients = 200
	ts := newTestServer(b, Config{}, nil)
	h := ts.hub
	payload := map[string]any{
		"kind": "Node", "name": "lab-node-1", "resourceVersion": "12345",
		"status": map[string]any{"addresses": []string{"10.0.0.7", "lab-node-1.internal"}, "ready": true},
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	conns := make([]*websocket.Conn, clients)
	for i := range conns {
		conns[i] = dial(b, ts.url, nil)
	}
	for _, c := range conns {
		if m := mustRead(b, c); m.Type != TypeSnapshot {
			b.Fatalf("first message %s", m.Type)
		}
	}
	waitFor(b, "all subscribed", func() bool { return h.Stats().Subscribers == clients })
	runtime.GC()
	runtime.ReadMemStats(&after)
	heapPerClient := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / clients
	stackPerClient := float64(int64(after.StackInuse)-int64(before.StackInuse)) / clients

	var remaining atomic.Int64
	delivered := make(chan struct{}, 1)
	for _, c := range conns {
		go func() {
			for {
				if _, _, err := c.Read(context.Background()); err != nil {
					return
				}
				if remaining.Add(-1) == 0 {
					delivered <- struct{}{}
				}
			}
		}()
	}

	var lat []time.Duration
	for b.Loop() {
		remaining.Store(clients)
		start := time.Now()
		if _, err := h.Publish(TypeObject, payload); err != nil {
			b.Fatal(err)
		}
		select {
		case <-delivered:
		case <-time.After(guard):
			b.Fatalf("message not delivered to all clients; %d missing", remaining.Load())
		}
		lat = append(lat, time.Since(start))
	}
	if st := h.Stats(); st.Dropped != 0 {
		b.Fatalf("clients dropped: %+v", st)
	}

	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := int(p*float64(len(lat))+0.5) - 1
		i = max(0, min(i, len(lat)-1))
		return float64(lat[i]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(heapPerClient, "B/client")
	b.ReportMetric(stackPerClient, "stack-B/client")
}
