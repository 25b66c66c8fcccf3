package testutil

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a testing.TB that records a Fatalf instead of ending the
// goroutine, so a test can look at how Eventually fails.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r)
}

// run calls f with a recorder and returns what it failed with ("" if it
// did not fail).
func run(t *testing.T, f func(tb testing.TB)) (failed string) {
	r := &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		failed = r.failed
	}()
	f(r)
	return ""
}

func TestEventually(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wait     func(tb testing.TB)
		wantFail []string // substrings of the failure; nil = must pass
	}{
		{
			name: "true at once",
			wait: func(tb testing.TB) {
				Eventually(tb, time.Second, "x", func() (bool, string) { return true, "" })
			},
		},
		{
			name: "true after some polls",
			wait: func(tb testing.TB) {
				var n atomic.Int32
				Eventually(tb, 5*time.Second, "x", func() (bool, string) { return n.Add(1) > 5, "" })
			},
		},
		{
			name: "timeout reports the last state",
			wait: func(tb testing.TB) {
				var n atomic.Int32
				Eventually(tb, 20*time.Millisecond, "three nodes", func() (bool, string) {
					return false, fmt.Sprintf("%d polls", n.Add(1))
				})
			},
			wantFail: []string{"waiting for three nodes", "last seen: ", " polls"},
		},
		{
			name: "bool variant",
			wait: func(tb testing.TB) {
				EventuallyTrue(tb, 20*time.Millisecond, "never", func() bool { return false })
			},
			wantFail: []string{"timed out after 20ms waiting for never"},
		},
		{
			name: "ctx variant reports the last error",
			wait: func(tb testing.TB) {
				EventuallyCtx(tb, 20*time.Millisecond, "a pod", func(ctx context.Context) (bool, error) {
					return false, errors.New("pod web not found")
				})
			},
			wantFail: []string{"waiting for a pod; last seen: pod web not found"},
		},
		{
			name: "ctx variant: true with an error counts as true",
			wait: func(tb testing.TB) {
				EventuallyCtx(tb, time.Second, "x", func(ctx context.Context) (bool, error) {
					return true, errors.New("ignored")
				})
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failed := run(t, tc.wait)
			if tc.wantFail == nil {
				if failed != "" {
					t.Fatalf("failed: %s", failed)
				}
				return
			}
			for _, s := range tc.wantFail {
				if !strings.Contains(failed, s) {
					t.Errorf("failure %q lacks %q", failed, s)
				}
			}
		})
	}
}
