package gctune

import (
	"context"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// fakeRuntime stands in for the Go runtime: an allocation counter the test
// advances and a record of every GOGC the tuner set.
type fakeRuntime struct {
	allocated uint64
	set       []int
	released  int
}

func (f *fakeRuntime) config(clk *clocktesting.FakeClock) Config {
	return Config{
		Clock:      clk,
		Allocated:  func() uint64 { return f.allocated },
		SetPercent: func(p int) int { f.set = append(f.set, p); return 0 },
		Release:    func() { f.released++ },
	}
}

func TestObserve(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name  string
		rates []float64 // MB/s in each 1 s interval
		busy  bool
		set   []int // every GOGC set, the initial idle one included
	}{
		{"idle lab stays at 50", []float64{0.4, 0.5, 0.3}, false, []int{50}},
		{"a burst makes it busy", []float64{0.4, 300}, true, []int{50, 100}},
		{"busy stays busy while the rate is high", []float64{300, 200, 5, 300}, true, []int{50, 100}},
		{"a short lull keeps it busy", []float64{300, 1, 1, 1, 1, 1}, true, []int{50, 100}},
		// The first calm second starts the clock; ten seconds after it
		// the lab is idle again.
		{"calm for 10 s makes it idle", append([]float64{300}, slices.Repeat([]float64{1}, 11)...), false, []int{50, 100, 50}},
		{"a burst inside the calm restarts it", append(append([]float64{300}, slices.Repeat([]float64{1}, 8)...), append([]float64{300}, slices.Repeat([]float64{1}, 8)...)...), true, []int{50, 100}},
		{"exactly the busy rate is busy", []float64{4}, true, []int{50, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			rt := &fakeRuntime{}
			tu, err := New(rt.config(clk))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.rates {
				clk.Step(time.Second)
				rt.allocated += uint64(r * mb)
				tu.observe()
			}
			if tu.busy != tc.busy {
				t.Errorf("busy = %v, want %v", tu.busy, tc.busy)
			}
			if !slices.Equal(rt.set, tc.set) {
				t.Errorf("GOGC set to %v, want %v", rt.set, tc.set)
			}
			// Memory goes back to the OS each time the lab turns idle, and
			// only then.
			wantReleased := 0
			for i := 1; i < len(tc.set); i++ {
				if tc.set[i] == 50 {
					wantReleased++
				}
			}
			if rt.released != wantReleased {
				t.Errorf("memory released %d times, want %d", rt.released, wantReleased)
			}
		})
	}
}

func TestRunRestoresIdleTarget(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	rt := &fakeRuntime{}
	cfg := rt.config(clk)
	observed := make(chan struct{})
	cfg.Allocated = func() uint64 {
		rt.allocated += 100 << 20
		select {
		case observed <- struct{}{}:
		default:
		}
		return rt.allocated
	}
	tu, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tu.Run(ctx); close(done) }()
	// Step until the loop has read the counter once after its ticker fired.
	for waiting := true; waiting; {
		clk.Step(time.Second)
		select {
		case <-observed:
			waiting = false
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	<-done
	if want := []int{50, 100, 50}; !slices.Equal(rt.set, want) {
		t.Fatalf("GOGC set to %v, want %v (busy while running, idle after)", rt.set, want)
	}
	if rt.released != 0 {
		t.Fatalf("memory released %d times on stopping; that is the process's business then", rt.released)
	}
}

func TestBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"negative idle", Config{IdlePercent: -1}},
		{"negative busy", Config{BusyPercent: -5}},
		{"negative rate", Config{BusyRate: -1}},
		{"calm shorter than interval", Config{Interval: 2 * time.Second, Calm: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := false
			tc.cfg.SetPercent = func(int) int { set = true; return 0 }
			tc.cfg.Release = func() { set = true }
			if _, err := New(tc.cfg); err == nil {
				t.Fatal("New accepted it")
			}
			if set {
				t.Fatal("a rejected config changed GOGC")
			}
		})
	}
}
