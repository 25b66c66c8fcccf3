package classroom

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestIdle: only visited labs with no request in flight stop, and only
// after --idle-stop without a visit; warm and prestarted labs wait.
func TestIdle(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	cfg := &Config{Students: []string{"alice", "bob", "carol"}, IdleStop: 30 * time.Minute, Clock: clk, Logger: nil}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	b := newLocalBackend(cfg, &tokens{students: map[string]string{}}, nil)
	for _, l := range b.labs {
		l.state = stateReady // as if running; no process is needed to decide
	}
	endAlice := b.Visit("alice")
	endAlice()
	endBob := b.Visit("bob") // bob keeps a websocket open
	names := func() []string {
		var out []string
		for _, l := range b.idle() {
			out = append(out, l.name)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		advance time.Duration
		before  func()
		want    []string
	}{
		{"just visited", 0, nil, nil},
		{"almost idle", 29 * time.Minute, nil, nil},
		{"alice idle; bob's websocket open; carol never came", time.Minute, nil, []string{"alice"}},
		{"bob's websocket closed: his idle time starts now", 0, func() { endBob() }, []string{"alice"}},
		{"bob idle too", 30 * time.Minute, nil, []string{"alice", "bob"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			clk.Step(tc.advance)
			got := names()
			if len(got) != len(tc.want) {
				t.Fatalf("idle = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("idle = %v, want %v", got, tc.want)
				}
			}
		})
	}
}
