package gctune

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"k8s.io/utils/clock"
)

// Config says when the lab counts as busy and what GOGC each state gets.
type Config struct {
	// IdlePercent is GOGC while the lab is idle. Default 50.
	IdlePercent int
	// BusyPercent is GOGC while it is busy. Default 100, Go's own.
	BusyPercent int
	// BusyRate is the allocation rate, in bytes per second, at or above
	// which the lab is busy. Default 4 MB/s: an idle lab allocates about a
	// tenth of that, one node joining or one Service converging more.
	BusyRate float64
	// Calm is how long the rate must stay under BusyRate before the lab
	// counts as idle again, so that a burst of work (a Deployment rolling
	// out, a health round) does not flip the target back and forth.
	// Default 10 s.
	Calm time.Duration
	// Interval is how often the rate is read. Default 1 s.
	Interval time.Duration
	// Logger hears each switch (at Info, with the rate). Default: none.
	Logger *slog.Logger

	// Clock, Allocated, SetPercent and Release are the tuner's view of the
	// world; tests replace them. Defaults: the real clock, the runtime's
	// cumulative heap allocation count, debug.SetGCPercent and
	// debug.FreeOSMemory.
	Clock      clock.WithTicker
	Allocated  func() uint64
	SetPercent func(int) int
	// Release is called when the lab turns idle again. What the busy
	// spell grew the heap to would otherwise stay resident until the next
	// collection, which an idle lab reaches only every minute or two; one
	// forced collection (a fraction of a second of CPU, once per spell)
	// makes the idle RSS the idle working set again.
	Release func()
}

func (c *Config) defaults() {
	if c.IdlePercent == 0 {
		c.IdlePercent = 50
	}
	if c.BusyPercent == 0 {
		c.BusyPercent = 100
	}
	if c.BusyRate == 0 {
		c.BusyRate = 4 << 20
	}
	if c.Calm == 0 {
		c.Calm = 10 * time.Second
	}
	if c.Interval == 0 {
		c.Interval = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Allocated == nil {
		c.Allocated = heapAllocated
	}
	if c.SetPercent == nil {
		c.SetPercent = debug.SetGCPercent
	}
	if c.Release == nil {
		c.Release = debug.FreeOSMemory
	}
}

func (c *Config) validate() error {
	switch {
	case c.IdlePercent < 1 || c.BusyPercent < 1:
		return fmt.Errorf("GOGC %d idle / %d busy: both must be at least 1", c.IdlePercent, c.BusyPercent)
	case c.BusyRate <= 0:
		return fmt.Errorf("busy rate %.0f B/s must be positive", c.BusyRate)
	case c.Interval <= 0 || c.Calm < c.Interval:
		return fmt.Errorf("interval %s must be positive and calm %s at least one interval", c.Interval, c.Calm)
	}
	return nil
}

// Tuner is the state of one tuning loop.
type Tuner struct {
	cfg       Config
	busy      bool
	calmSince time.Time // when the rate last fell under BusyRate; zero while it is over
	lastBytes uint64
	lastAt    time.Time
}

// New validates cfg and sets GOGC to the idle target.
func New(cfg Config) (*Tuner, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	t := &Tuner{cfg: cfg, lastBytes: cfg.Allocated(), lastAt: cfg.Clock.Now()}
	cfg.SetPercent(cfg.IdlePercent)
	return t, nil
}

// Run reads the allocation rate every Interval until ctx ends, then
// leaves GOGC at the idle target.
func (t *Tuner) Run(ctx context.Context) {
	tick := t.cfg.Clock.NewTicker(t.cfg.Interval)
	defer tick.Stop()
	defer t.cfg.SetPercent(t.cfg.IdlePercent)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
			t.observe()
		}
	}
}

// observe reads the allocation count once and switches the target if the
// lab's state changed.
func (t *Tuner) observe() {
	now, bytes := t.cfg.Clock.Now(), t.cfg.Allocated()
	elapsed := now.Sub(t.lastAt).Seconds()
	if elapsed <= 0 {
		return
	}
	rate := float64(bytes-t.lastBytes) / elapsed
	t.lastBytes, t.lastAt = bytes, now
	switch {
	case rate >= t.cfg.BusyRate:
		t.calmSince = time.Time{}
		if !t.busy {
			t.busy = true
			t.cfg.SetPercent(t.cfg.BusyPercent)
			t.cfg.Logger.Info("busy: GOGC up", "gogc", t.cfg.BusyPercent, "alloc_mb_per_s", rate/(1<<20))
		}
	case t.busy && t.calmSince.IsZero():
		t.calmSince = now
	case t.busy && now.Sub(t.calmSince) >= t.cfg.Calm:
		t.busy = false
		t.calmSince = time.Time{}
		t.cfg.SetPercent(t.cfg.IdlePercent)
		t.cfg.Release()
		t.cfg.Logger.Info("idle: GOGC down, memory released", "gogc", t.cfg.IdlePercent, "calm", t.cfg.Calm)
	}
}

// heapAllocated is the total bytes allocated on the heap since the
// process started (a cumulative counter; its rate is what matters).
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s) // supported since Go 1.16, so always a uint64
	return s[0].Value.Uint64()
}
