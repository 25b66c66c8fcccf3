package exercises

import (
	"context"
	"fmt"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/history"
)

// StepAnswerResult is the answer to a typed step answer.
type StepAnswerResult struct {
	Step    string `json:"step"`
	Value   string `json:"value"`
	Correct bool   `json:"correct"`
	// Detail says what was compared, without giving the value away.
	Detail   string `json:"detail"`
	Attempts int    `json:"attempts"`
	// Report is the check that follows a right answer (nil otherwise).
	Report *CheckReport `json:"report,omitempty"`
}

// AnswerStep records the value a student typed for the current step and
// compares it with the lab's. A right answer is kept, and the step is
// checked at once.
func (s *Service) AnswerStep(ctx context.Context, id, step, value, lang string) (StepAnswerResult, error) {
	ex, i, lang, err := s.lookupStep(id, step, lang)
	if err != nil {
		return StepAnswerResult{}, err
	}
	st := ex.Steps[i]
	if st.Answer == nil {
		return StepAnswerResult{}, fmt.Errorf("%w: step %s of %s asks for no answer", ErrBadInput, step, id)
	}
	value, err = check.NormalizeAnswer(value)
	if err != nil {
		return StepAnswerResult{}, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	if why := s.availability(ex); why != "" {
		return StepAnswerResult{}, fmt.Errorf("%w: %s", ErrUnavailable, why)
	}
	s.mu.Lock()
	steps, err := s.cfg.Store.Steps(ctx, id)
	if err != nil {
		s.mu.Unlock()
		return StepAnswerResult{}, err
	}
	if err := s.resetWentThrough(ctx, id); err != nil {
		s.mu.Unlock()
		return StepAnswerResult{}, err
	}
	for _, before := range ex.Steps[:i] {
		if !steps[before.ID].Passed() {
			s.mu.Unlock()
			return StepAnswerResult{}, errText(ErrNotCurrent,
				fmt.Sprintf("ステップ %s は %s の後です。%s はまだ通っていません", step, before.ID, before.ID),
				fmt.Sprintf("step %s comes after %s, which has not passed", step, before.ID))
		}
	}
	if steps[step].Passed() {
		s.mu.Unlock()
		return StepAnswerResult{}, errText(ErrNotCurrent, fmt.Sprintf("ステップ %s はもう通っています", step), fmt.Sprintf("step %s has passed already", step))
	}
	start, err := s.startOf(ctx, id)
	if err != nil {
		s.mu.Unlock()
		return StepAnswerResult{}, err
	}
	r := s.runOf(id)
	s.active = id
	o := check.CheckAnswer(ctx, s.cfg.Env, check.Input{Start: start, StartSeq: r.startSeq, Since: r.since, Exercise: id, Step: step}, *st.Answer, value)
	a, err := s.cfg.Store.RecordStepAnswer(ctx, id, step, value, o.Pass, s.cfg.Now())
	s.mu.Unlock()
	if err != nil {
		return StepAnswerResult{}, err
	}
	s.cfg.Env.History.Record(history.Entry{Kind: history.KindAnswer, Answer: &history.Answer{Exercise: id, Step: step, Value: value, Correct: o.Pass}})
	res := StepAnswerResult{Step: step, Value: value, Correct: o.Pass, Detail: o.Detail.In(i18n.Lang(lang)), Attempts: a.Attempts}
	if o.Pass {
		rep, err := s.Check(ctx, id, lang)
		if err != nil {
			return StepAnswerResult{}, err
		}
		res.Report = &rep
	}
	return res, nil
}
