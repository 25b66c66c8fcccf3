package exercises

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/exercises/progress"
)

// lookup is how every call about one exercise starts: the language,
// checked, and the exercise.
func (s *Service) lookup(id, lang string) (*format.Exercise, string, error) {
	lang, err := normLang(lang)
	if err != nil {
		return nil, "", err
	}
	ex, err := s.get(id)
	if err != nil {
		return nil, "", err
	}
	return ex, lang, nil
}

// lookupStep is lookup for a call about one step: the exercise and the
// step's index.
func (s *Service) lookupStep(id, step, lang string) (*format.Exercise, int, string, error) {
	ex, lang, err := s.lookup(id, lang)
	if err != nil {
		return nil, -1, "", err
	}
	i := slices.IndexFunc(ex.Steps, func(st format.Step) bool { return st.ID == step })
	if i < 0 {
		return nil, -1, "", fmt.Errorf("%w: exercise %s has no step %q", ErrNotFound, id, step)
	}
	return ex, i, lang, nil
}

// stepRecord is what the store keeps of an exercise's steps: how far each
// got, the values typed, the hints opened, and when the exercise started.
type stepRecord struct {
	steps map[string]progress.StepProgress
	typed map[string]progress.StepAnswer
	hints map[string]int
	start time.Time
}

func (s *Service) stepRecord(ctx context.Context, id string) (stepRecord, error) {
	var r stepRecord
	var err error
	if r.steps, err = s.cfg.Store.Steps(ctx, id); err != nil {
		return r, err
	}
	if r.typed, err = s.cfg.Store.StepAnswers(ctx, id); err != nil {
		return r, err
	}
	if r.hints, err = s.cfg.Store.Hints(ctx, id); err != nil {
		return r, err
	}
	r.start, err = s.startOf(ctx, id)
	return r, err
}
