package exercises

import (
	"context"
	"time"

	"github.com/ccmlab/ccmlab/exercises/format"
)

// Run checks, by itself, the exercise the student is on (the last one
// reset, checked or answered) while it is not done, a moment (Config.AutoCheckDelay) after the lab
// changed, and every few seconds for what changes without an event
// (health checks). A step that passed is told to Config.OnProgress. It
// returns when ctx ends.
func (s *Service) Run(ctx context.Context) error {
	// A failure here is on the exercise's page (its reset note); the lab
	// runs on.
	if err := s.FinishInterrupted(ctx); err != nil && ctx.Err() == nil {
		s.cfg.Logger.Error("finishing interrupted resets", "err", err)
	}
	wake, stop := s.cfg.Env.History.Subscribe()
	defer stop()
	tick := time.NewTicker(3 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(s.cfg.AutoCheckDelay):
			}
			// What the check itself records (answers) must not wake it again
			// for nothing: drain what arrived during the delay.
			select {
			case <-wake:
			default:
			}
		case <-tick.C:
		}
		s.autoCheck(ctx)
	}
}

// AutoCheck runs one round of the automatic check (tests call it to not
// depend on timing).
func (s *Service) AutoCheck(ctx context.Context) { s.autoCheck(ctx) }

func (s *Service) autoCheck(ctx context.Context) {
	s.mu.Lock()
	var ids []string
	if s.active != "" {
		ids = append(ids, s.active)
	}
	s.mu.Unlock()
	for _, id := range ids {
		ex := s.byID[id]
		if len(ex.Steps) == 0 || s.availability(ex) != "" {
			continue
		}
		before, err := s.cfg.Store.Steps(ctx, id)
		if err != nil {
			s.cfg.Logger.Warn("automatic check", "exercise", id, "err", err)
			continue
		}
		if passedAll(ex, before) {
			continue
		}
		rep, err := s.check(ctx, id, format.LangEN, true)
		if err != nil {
			if ctx.Err() == nil {
				s.cfg.Logger.Warn("automatic check", "exercise", id, "err", err)
			}
			continue
		}
		for _, st := range rep.Steps {
			if st.Checked && st.Status == StepPassed {
				s.cfg.Logger.Info("step passed", "exercise", id, "step", st.ID)
				if s.cfg.OnProgress != nil {
					s.cfg.OnProgress(id)
				}
			}
		}
	}
}
