package exercises

import (
	"context"
	"time"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/exercises/progress"
)

// run is one exercise's place in the history.
type run struct {
	startSeq uint64 // the reset's mark
	since    uint64 // when the last step passed (startSeq before)
}

func (s *Service) startOf(ctx context.Context, id string) (time.Time, error) {
	t, ok, err := s.cfg.Store.Started(ctx, id)
	if err != nil || !ok {
		return s.created, err
	}
	return t, nil
}

// counts are an exercise's wrong answers and opened hints, and whether it
// was reset.
type counts struct {
	wrong, hints int
	started      bool
}

func (s *Service) counts(ctx context.Context, id string) (counts, error) {
	wrong, err := s.cfg.Store.WrongAnswers(ctx, id)
	if err != nil {
		return counts{}, err
	}
	hints, err := s.cfg.Store.Hints(ctx, id)
	if err != nil {
		return counts{}, err
	}
	_, started, err := s.cfg.Store.Started(ctx, id)
	if err != nil {
		return counts{}, err
	}
	c := counts{wrong: wrong, started: started}
	for _, n := range hints {
		c.hints += n
	}
	return c, nil
}

// runOf returns the exercise's place in the history; an exercise not
// reset since the process started reads the whole history. Call with mu.
func (s *Service) runOf(id string) *run {
	r, ok := s.runs[id]
	if !ok {
		r = &run{}
		s.runs[id] = r
	}
	return r
}

func passedAll(ex *format.Exercise, steps map[string]progress.StepProgress) bool {
	for _, st := range ex.Steps {
		if !steps[st.ID].Passed() {
			return false
		}
	}
	return true
}
