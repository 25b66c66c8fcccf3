package exercises

import (
	"context"
	"fmt"
)

// RevealHint opens the next hint of the current step of exercise id; once
// every hint is open, one more call reveals the solution. It returns the
// exercise as Get does.
func (s *Service) RevealHint(ctx context.Context, id, step, lang string) (Detail, error) {
	ex, i, _, err := s.lookupStep(id, step, lang)
	if err != nil {
		return Detail{}, err
	}
	s.mu.Lock()
	steps, err := s.cfg.Store.Steps(ctx, id)
	if err == nil {
		for _, before := range ex.Steps[:i] {
			if !steps[before.ID].Passed() {
				err = errText(ErrNotCurrent,
					fmt.Sprintf("ステップ %s は %s の後です。%s はまだ通っていません", step, before.ID, before.ID),
					fmt.Sprintf("step %s comes after %s, which has not passed", step, before.ID))
				break
			}
		}
	}
	if err == nil && steps[step].Passed() {
		err = errText(ErrNotCurrent, fmt.Sprintf("ステップ %s はもう通っています", step), fmt.Sprintf("step %s has passed already", step))
	}
	if err == nil {
		_, err = s.cfg.Store.RevealHint(ctx, id, step, len(ex.Steps[i].Hints)+1)
	}
	s.mu.Unlock()
	if err != nil {
		return Detail{}, err
	}
	return s.Get(ctx, id, lang)
}
