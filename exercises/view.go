package exercises

import (
	"context"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/labapi"
)

// The views of the exercise API are wire types, defined in
// internal/labapi so that the classroom reads them without linking the
// exercises.
type (
	Summary      = labapi.Summary
	Detail       = labapi.Detail
	ResetNote    = labapi.ResetNote
	StepView     = labapi.StepView
	SolutionView = labapi.SolutionView
	AnswerView   = labapi.AnswerView
	CommandView  = labapi.CommandView
)

func (s *Service) summary(ex *format.Exercise, lang string, steps map[string]progress.StepProgress, answers map[string]progress.Answer, n counts) Summary {
	sum := Summary{ID: ex.ID, Order: ex.Order, Title: ex.Title.In(i18n.Lang(lang)), Goal: ex.Goal.In(i18n.Lang(lang)), Minutes: ex.Minutes,
		Steps: len(ex.Steps), Questions: len(ex.Quiz), WrongAnswers: n.wrong, HintsOpened: n.hints, Started: n.started}
	if why := s.unavailable(ex); why.EN != "" {
		sum.Unavailable = why.In(i18n.Lang(lang))
		sum.Restart = s.restartFor(ex)
	} else {
		sum.Available = true
	}
	for _, st := range ex.Steps {
		if steps[st.ID].Passed() {
			sum.StepsPassed++
		}
	}
	answered := 0
	for _, q := range ex.Quiz {
		a := answers[q.ID]
		if a.Attempts > 0 {
			answered++
		}
		if a.Attempts > 0 && a.FirstCorrect {
			sum.QuestionsCorrect++
		}
	}
	// A quiz counts the first answer: it is done once every question was
	// answered, right or wrong; QuestionsCorrect is the score.
	sum.Done = sum.StepsPassed == sum.Steps && answered == sum.Questions
	return sum
}

// List returns every exercise, in order, with progress.
func (s *Service) List(ctx context.Context, lang string) ([]Summary, error) {
	lang, err := normLang(lang)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(s.exercises))
	for _, ex := range s.exercises {
		steps, err := s.cfg.Store.Steps(ctx, ex.ID)
		if err != nil {
			return nil, err
		}
		answers, err := s.cfg.Store.Answers(ctx, ex.ID)
		if err != nil {
			return nil, err
		}
		n, err := s.counts(ctx, ex.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, s.summary(ex, lang, steps, answers, n))
	}
	return out, nil
}

// Get returns one exercise in lang with progress.
func (s *Service) Get(ctx context.Context, id, lang string) (Detail, error) {
	ex, lang, err := s.lookup(id, lang)
	if err != nil {
		return Detail{}, err
	}
	rec, err := s.stepRecord(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	steps, typed, hints, start := rec.steps, rec.typed, rec.hints, rec.start
	answers, err := s.cfg.Store.Answers(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	n, err := s.counts(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	seed, err := s.seed(ctx)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{
		Summary: s.summary(ex, lang, steps, answers, n), Setup: ex.Setup.About.In(i18n.Lang(lang)),
		Profiles: ex.Setup.Profiles, Requires: ex.Setup.Requires, StartedAt: start,
		Latency: ex.Setup.Latency, CloudLatency: s.cfg.Env.Cloud.Faults().Latency.Duration.String(), Shell: s.shellLine(),
		Steps: []StepView{}, Quiz: []QuestionView{},
	}
	locked := false
	for _, st := range ex.Steps {
		p := steps[st.ID]
		if locked {
			// A locked step's body, commands and checks tell what the
			// steps before it lead to: only its title leaves the lab.
			d.Steps = append(d.Steps, StepView{ID: st.ID, Title: st.Title.In(i18n.Lang(lang)), Commands: []CommandView{}, Hints: []string{},
				Passed: p.Passed(), PassedAt: p.PassedAt, Attempts: p.Attempts, Locked: true, Solution: []SolutionView{}})
			continue
		}
		v := StepView{ID: st.ID, Title: st.Title.In(i18n.Lang(lang)), Body: st.Body.In(i18n.Lang(lang)), Commands: []CommandView{}, Hints: []string{},
			HintCount: len(st.Hints), Passed: p.Passed(), PassedAt: p.PassedAt, Attempts: p.Attempts, Solution: []SolutionView{}}
		// The answer is to be found: hints one at a time, the solution
		// last, and only what was asked for leaves the lab.
		shown := hints[st.ID]
		if shown > len(st.Hints) {
			for _, c := range st.Solution {
				if c.Do != nil {
					v.Solution = append(v.Solution, SolutionView{Action: c.Do.In(i18n.Lang(lang))})
				} else {
					line := s.onThisLab(c.Cmd)
					v.Solution = append(v.Solution, SolutionView{Command: line, Console: s.console(line)})
				}
			}
		} else {
			v.SolutionHidden = len(st.Solution) > 0
		}
		if st.Answer != nil {
			a := typed[st.ID]
			v.Answer = &AnswerView{Prompt: st.Answer.Prompt.In(i18n.Lang(lang)), Value: a.Value, Correct: a.Correct, Attempts: a.Attempts}
		}
		for _, c := range st.Commands {
			line := s.onThisLab(c)
			v.Commands = append(v.Commands, CommandView{Line: line, Console: s.console(line)})
		}
		for _, h := range st.Hints[:min(shown, len(st.Hints))] {
			v.Hints = append(v.Hints, h.In(i18n.Lang(lang)))
		}
		for _, c := range st.Checks {
			v.Checks = append(v.Checks, c.Kind)
		}
		if p.Passed() {
			v.Explanation = st.Explanation.In(i18n.Lang(lang))
		} else if !locked {
			d.CurrentStep = st.ID
			locked = true
		}
		d.Steps = append(d.Steps, v)
	}
	quizOpen := d.StepsPassed == len(ex.Steps)
	for _, q := range ex.Quiz {
		if a := answers[q.ID]; !quizOpen && a.Attempts == 0 {
			// The quiz asks what the steps show; before they pass, its
			// question and choices would be answered by reading.
			d.Quiz = append(d.Quiz, QuestionView{ID: q.ID, Choices: []ChoiceView{}, Locked: true})
			continue
		}
		d.Quiz = append(d.Quiz, questionView(q, answers[q.ID], lang, choiceOrder(seed, id, q.ID, len(q.Choices))))
	}
	if d.Done {
		d.Ending = ex.Ending.In(i18n.Lang(lang))
	}
	if rs, ok, err := s.cfg.Store.Reset(ctx, id); err != nil {
		return Detail{}, err
	} else if ok {
		d.Reset = &ResetNote{State: rs.State, Note: decodeNote(rs.Note).In(i18n.Lang(lang)), At: rs.At}
	}
	if id == MysteryID {
		mv, err := s.Mystery(ctx, lang)
		if err != nil {
			return Detail{}, err
		}
		d.MysteryView = &mv
	}
	return d, nil
}
