package exercises

import (
	"context"
	"fmt"

	"github.com/ccmlab/ccmlab/exercises/progress"
)

// The classroom pace (pace, reset.go) outlives a restart of the lab: the
// cloud saves its latency with its state, so the reset after a restart
// must still know which latency a reset set for its pace and what it
// replaced, or the pace of one exercise would stay for every next one.

// loadPace reads, once, the pace a reset recorded before the lab
// restarted. Call with mu.
func (s *Service) loadPace(ctx context.Context) error {
	if s.paceLoaded {
		return nil
	}
	p, ok, err := s.cfg.Store.Pace(ctx)
	if err != nil {
		return fmt.Errorf("reading the classroom pace: %w", err)
	}
	if ok {
		s.pace = &pace{set: p.Set, before: p.Before}
	}
	s.paceLoaded = true
	return nil
}

// setPace records p (nil: none), in memory and in the store. Call with mu.
func (s *Service) setPace(ctx context.Context, p *pace) error {
	var rec *progress.Pace
	if p != nil {
		rec = &progress.Pace{Set: p.set, Before: p.before}
	}
	if err := s.cfg.Store.SetPace(ctx, rec); err != nil {
		return fmt.Errorf("recording the classroom pace: %w", err)
	}
	s.pace, s.paceLoaded = p, true
	return nil
}
