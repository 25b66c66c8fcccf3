package hub

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ccmlab/ccmlab/internal/testutil"
)

// TestRecordingStartsAtReady: while the lab starts, Snapshot fails and the
// hub tries again only baseRetry later, on a Publish. A flow published
// within that second (a quick student, or a test) found no base, and the
// first download took one after it: two lines, nothing to replay. A base
// taken when the lab is ready (StartRecording) keeps the flow.
func TestRecordingStartsAtReady(t *testing.T) {
	for _, tc := range []struct {
		name         string
		startAtReady bool
		wantFrames   int
	}{
		{name: "without StartRecording (the old two-line recording)", wantFrames: 0},
		{name: "with StartRecording", startAtReady: true, wantFrames: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC))
			var (
				mu       sync.Mutex
				ready    bool
				state    int
				attempts int
			)
			h, err := New(Config{
				Logger: testLogger(), Clock: clk, RecordEvery: 512,
				Snapshot: func(context.Context) (any, error) {
					mu.Lock()
					defer mu.Unlock()
					attempts++
					if !ready {
						return nil, errors.New("the lab is starting")
					}
					return state, nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), guard)
				defer cancel()
				_ = h.Close(ctx)
			})
			// Starting up: the first Publish tries a base, which fails.
			mustPublish(t, h, TypeObject, "node joined")
			testutil.EventuallyTrue(t, guard, "the failed base attempt to finish", func() bool {
				h.mu.Lock()
				defer h.mu.Unlock()
				return !h.basing && !h.baseFailed.IsZero()
			})

			mu.Lock()
			ready = true
			mu.Unlock()
			if tc.startAtReady {
				if err := h.StartRecording(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			// A Service's flow, all within baseRetry of the failure.
			var flow []uint64
			for i := 1; i <= 3; i++ {
				mu.Lock()
				state = i
				flow = append(flow, mustPublish(t, h, TypeObject, i))
				mu.Unlock()
			}
			mu.Lock()
			tried := attempts
			mu.Unlock()
			if tried != 1+btoi(tc.startAtReady) {
				t.Fatalf("Snapshot called %d times before the download, want %d", tried, 1+btoi(tc.startAtReady))
			}

			_, hd, lines := getRecording(t, h, "")
			if hd.Frames != tc.wantFrames || len(lines) != 1+tc.wantFrames {
				t.Fatalf("recording has %d frames (%d lines after the header), want %d", hd.Frames, len(lines), tc.wantFrames)
			}
			for i, l := range lines[1:] {
				if l.Seq != flow[i] {
					t.Errorf("frame %d has seq %d, want the flow's %d", i, l.Seq, flow[i])
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
