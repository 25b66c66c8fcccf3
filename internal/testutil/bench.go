package testutil

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// ReportLatencies reports lat's p50, p99 and max in milliseconds, the
// figures the budgets table reads, and zeroes ns/op: a benchmark op's wall
// time includes its setup, so the percentiles are the result.
func ReportLatencies(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	pct := func(p float64) float64 {
		i := int(p*float64(len(s))+0.5) - 1
		return float64(s[max(0, min(i, len(s)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(s[len(s)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(0, "ns/op")
}

// WaitWatch reads w until an event matches, failing tb when the watch
// closes or 30 s pass without one.
func WaitWatch(tb testing.TB, w watch.Interface, match func(watch.Event) bool) {
	tb.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				tb.Fatal("watch closed")
			}
			if match(e) {
				return
			}
		case <-timeout.C:
			tb.Fatal("timed out waiting on the watch")
		}
	}
}
