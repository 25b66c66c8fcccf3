package testutil

import (
	"context"
	"testing"
	"time"
)

// Polling starts fast, so an in-memory condition that holds after a few
// microseconds of background work costs the test about that much, and backs
// off to maxInterval, so a condition that waits on the apiserver does not
// flood it.
const (
	minInterval = time.Millisecond
	maxInterval = 100 * time.Millisecond
)

// Eventually polls cond until it reports true or timeout passes. cond
// explains a false with a short description of what it saw ("3 nodes,
// want 4", "phase Pending"); when the deadline passes, t fails with what
// and the last such description, so a timeout says where the lab stood, not
// only that it was late.
//
// cond runs on the test's goroutine, at once and then with intervals that
// grow from 1 ms to 100 ms. The timeout should be generous: a condition that
// holds returns at once, so a long timeout only costs time when the test
// fails anyway, and the race pass on a loaded 2-core machine is several
// times slower than a plain run.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	interval := minInterval
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if state == "" {
				t.Fatalf("timed out after %s waiting for %s", timeout, what)
			}
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, state)
		}
		time.Sleep(interval)
		interval = min(2*interval, maxInterval)
	}
}

// EventuallyTrue is Eventually for a condition with nothing to report.
func EventuallyTrue(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, timeout, what, func() (bool, string) { return cond(), "" })
}

// EventuallyCtx is Eventually for a condition that talks to the apiserver:
// cond gets a context that ends at the deadline, and may explain a false
// with an error (a Get that failed, a field not yet set); the last error is
// the state reported on timeout. An error with true counts as true.
func EventuallyCtx(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	Eventually(t, timeout, what, func() (bool, string) {
		ok, err := cond(ctx)
		if ok || err == nil {
			return ok, ""
		}
		return false, err.Error()
	})
}
