package exercises

import (
	"context"
	"time"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/i18n"
)

// Summary is one line of the exercise list.
type Summary struct {
	ID      string `json:"id"`
	Order   int    `json:"order"`
	Title   string `json:"title"`
	Goal    string `json:"goal"`
	Minutes int    `json:"minutes"`
	// Available is false when this lab lacks what the exercise needs;
	// Unavailable then says what.
	Available   bool   `json:"available"`
	Unavailable string `json:"unavailable,omitempty"`
	// Restart, when the exercise is unavailable and the lab can restart
	// itself, is the profile and add-ons to restart it with
	// (POST /api/lab/restart).
	Restart *Restart `json:"restart,omitempty"`
	// Started: the exercise was reset (its StartedAt is its own). The
	// page reads it for the diagnosis challenge, which runs from its reset
	// until the cause is named.
	Started          bool `json:"started"`
	Steps            int  `json:"steps"`
	StepsPassed      int  `json:"stepsPassed"`
	Questions        int  `json:"questions"`
	QuestionsCorrect int  `json:"questionsCorrect"`
	Done             bool `json:"done"`
	// WrongAnswers counts wrong quiz choices, typed values and named
	// causes; HintsOpened the hints (and solutions) opened. Both are for
	// the instructor's dashboard.
	WrongAnswers int `json:"wrongAnswers"`
	HintsOpened  int `json:"hintsOpened"`
}

// Detail is one exercise in one language with the student's progress.
type Detail struct {
	Summary
	Setup    string   `json:"setup"`
	Profiles []string `json:"profiles,omitempty"`
	Requires []string `json:"requires,omitempty"`
	// Latency is the cloud latency the reset sets for classroom pace
	// ("" when the exercise leaves it alone); CloudLatency is the latency
	// now (the instructor may have changed it).
	Latency      string    `json:"latency,omitempty"`
	CloudLatency string    `json:"cloudLatency"`
	StartedAt    time.Time `json:"startedAt"`
	// CurrentStep is the id of the first step not passed ("" when all
	// passed or there are none).
	CurrentStep string         `json:"currentStep"`
	Steps       []StepView     `json:"steps"`
	Quiz        []QuestionView `json:"quiz"`
	// Reset is the note the last reset left when it did not simply go
	// through: it failed (and why), or it was interrupted by a stop of the
	// lab and finished at the next start. Nil otherwise.
	Reset *ResetNote `json:"reset,omitempty"`
	// Ending is the exercise's closing text (what was seen, the chapter's
	// section and goal it serves), sent only once the exercise is Done:
	// it names what the steps ask the student to find.
	Ending string `json:"ending,omitempty"`
	// *MysteryView: mystery-pending's service and causes (mystery.go).
	*MysteryView
}

// ResetNote is what the page says about the last reset.
type ResetNote struct {
	// State is progress.ResetFailed, progress.ResetResumed or
	// progress.ResetRunning (a reset is running now).
	State string    `json:"state"`
	Note  string    `json:"note,omitempty"`
	At    time.Time `json:"at"`
}

// StepView is a step as the page shows it.
type StepView struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	Body     string        `json:"body"`
	Commands []CommandView `json:"commands"`
	// Hints are the hints opened so far (POST …/steps/<step>/hint opens
	// the next); HintCount is how many the step has.
	Hints     []string `json:"hints"`
	HintCount int      `json:"hintCount"`
	// Checks names what "check now" looks at, e.g. "serviceExternalIP".
	Checks   []string  `json:"checks"`
	Passed   bool      `json:"passed"`
	PassedAt time.Time `json:"passedAt,omitzero"`
	Attempts int       `json:"attempts"`
	// Locked: an earlier step has not passed yet.
	Locked bool `json:"locked"`
	// Explanation is shown once the step passed.
	Explanation string `json:"explanation,omitempty"`
	// Solution is what passes the step, commands and page actions. It is
	// sent only once every hint was opened and the solution asked for (one
	// more …/hint): before that, SolutionHidden says there is one.
	Solution       []SolutionView `json:"solution"`
	SolutionHidden bool           `json:"solutionHidden,omitempty"`
	// Answer is set when the step asks the student to type a value.
	Answer *AnswerView `json:"answer,omitempty"`
}

// SolutionView is one line of a step's solution: a command (Command, with
// Console saying whether the lab's console runs it) or an action in words.
type SolutionView struct {
	Command string `json:"command,omitempty"`
	Console bool   `json:"console,omitempty"`
	Action  string `json:"action,omitempty"`
}

// AnswerView is a step's typed answer as the page shows it.
type AnswerView struct {
	Prompt   string `json:"prompt"`
	Value    string `json:"value,omitempty"` // the last value typed
	Correct  bool   `json:"correct"`
	Attempts int    `json:"attempts"`
}

// CommandView is one command to try. Console says whether the lab's
// console runs it; the others need a shell (pipes, sleep, jq).
type CommandView struct {
	Line    string `json:"line"`
	Console bool   `json:"console"`
}

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
		Latency: ex.Setup.Latency, CloudLatency: s.cfg.Env.Cloud.Faults().Latency.Duration.String(),
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
