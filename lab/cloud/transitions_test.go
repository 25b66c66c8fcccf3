package cloud

import (
	"path/filepath"
	"testing"
	"time"
)

// TestInstanceTransitionsHeld: with an InstanceTransition, stop, start and
// terminate hold stopping, pending and shutting-down until the time has
// passed (a fake clock), then reach stopped, running and terminated with
// their effects; a call that meets a transitional state answers as EC2.
func TestInstanceTransitionsHeld(t *testing.T) {
	const hold = 3 * time.Second
	type step struct {
		do      string // stop, start, terminate, or "" to let time pass
		wantErr string
		state   InstanceState // right after the call (or after the time passed)
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"stop, then start", []step{
			{do: "stop", state: InstanceStopping},
			{do: "stop", state: InstanceStopping}, // a no-op
			{do: "start", wantErr: ErrIncorrectState, state: InstanceStopping},
			{state: InstanceStopped},
			{do: "start", state: InstancePending},
			{do: "stop", wantErr: ErrIncorrectState, state: InstancePending},
			{state: InstanceRunning},
		}},
		{"terminate while stopping wins", []step{
			{do: "stop", state: InstanceStopping},
			{do: "terminate", state: InstanceShuttingDown},
			{do: "terminate", state: InstanceShuttingDown},
			{do: "start", wantErr: ErrIncorrectState, state: InstanceShuttingDown},
			{state: InstanceTerminated},
		}},
		{"the lab's own reset does not wait", []step{
			{do: "stop", state: InstanceStopping},
			{do: "terminate now", state: InstanceTerminated},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			c := newTestCloud(t, func(cfg *Config) { cfg.Clock, cfg.InstanceTransition = clk, hold })
			inst := mustRun(t, c, RunInstanceInput{})
			ctx := ctxAs("user")
			state := func() InstanceState {
				for _, i := range c.Instances() {
					if i.ID == inst.ID {
						return i.State
					}
				}
				return ""
			}
			for i, s := range tc.steps {
				var err error
				switch s.do {
				case "stop":
					_, err = c.StopInstance(ctx, inst.ID)
				case "start":
					_, err = c.StartInstance(ctx, inst.ID)
				case "terminate":
					_, err = c.TerminateInstance(ctx, inst.ID)
				case "terminate now":
					_, err = c.TerminateInstance(WithImmediateTransition(ctx), inst.ID)
				default:
					// Not a moment early: the state holds until the
					// whole transition time has passed.
					clk.Step(hold - time.Millisecond)
					if got := state(); got == s.state {
						t.Fatalf("step %d: %s before the transition time passed", i, got)
					}
					clk.Step(time.Millisecond)
					waitFor(t, string(s.state), func() bool { return state() == s.state })
					continue
				}
				if s.wantErr != "" {
					wantCode(t, err, s.wantErr, "")
				} else if err != nil {
					t.Fatalf("step %d: %s: %v", i, s.do, err)
				}
				if got := state(); got != s.state {
					t.Fatalf("step %d: %s: state %s, want %s", i, s.do, got, s.state)
				}
			}
		})
	}
}

// TestInstanceTransitionSavedMidway: a state file saved in the middle of a
// transition loads with the transition over; no timer survives a restart.
func TestInstanceTransitionSavedMidway(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.json")
	clk := newFakeClock()
	c := newTestCloud(t, func(cfg *Config) {
		cfg.Clock, cfg.InstanceTransition, cfg.StatePath = clk, time.Minute, path
	})
	a, b := mustRun(t, c, RunInstanceInput{}), mustRun(t, c, RunInstanceInput{})
	if _, err := c.StopInstance(ctxAs("user"), a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TerminateInstance(ctxAs("user"), b.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	again := newTestCloud(t, func(cfg *Config) { cfg.StatePath = path })
	want := map[string]InstanceState{a.ID: InstanceStopped, b.ID: InstanceTerminated}
	for _, i := range again.Instances() {
		if i.State != want[i.ID] {
			t.Errorf("%s: %s, want %s", i.ID, i.State, want[i.ID])
		}
	}
}
