package exercises

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/console"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/i18n"
)

// Errors the server maps to HTTP statuses.
var (
	// ErrNotFound: no exercise or question with that id (404).
	ErrNotFound = errors.New("not found")
	// ErrBadInput: a malformed request, e.g. a choice out of range, an
	// unknown language or a console line that is not an allowed kubectl
	// command (400).
	ErrBadInput = errors.New("bad input")
	// ErrUnavailable: the exercise needs a profile, controller or add-on
	// this lab does not have (409).
	ErrUnavailable = errors.New("exercise not available in this lab")
)

// Config wires a Service to the lab.
type Config struct {
	Env   check.Env
	Store *progress.Store
	// Nodes is how many nodes the lab runs (--nodes); Reset makes sure at
	// least this many instances run unless an exercise asks for another
	// number. Default 3.
	Nodes int
	// SettleTimeout bounds how long Reset waits for the lab to settle
	// (objects gone, nodes Ready and initialized). Default 60s.
	SettleTimeout time.Duration
	Logger        *slog.Logger
	// Now is the clock progress is stamped with. Default time.Now.
	Now func() time.Time
}

// Service is the exercises as the server sees them. All methods are safe
// for concurrent use; Check, Answer and Reset are applied one at a time.
type Service struct {
	cfg       Config
	exercises []*format.Exercise
	byID      map[string]*format.Exercise
	created   time.Time
	console   func(string) bool // accepted by the console's policy
	mu        sync.Mutex
}

// New loads the embedded exercises and checks cfg.
func New(cfg Config) (*Service, error) {
	if err := cfg.Env.Validate(); err != nil {
		return nil, err
	}
	if cfg.Store == nil {
		return nil, errors.New("exercises: Config.Store is required")
	}
	if cfg.Nodes <= 0 {
		cfg.Nodes = 3
	}
	if cfg.SettleTimeout <= 0 {
		cfg.SettleTimeout = 60 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	all, err := format.LoadAll()
	if err != nil {
		return nil, err
	}
	// format knows the files' structure, not the check kinds: a spec the
	// checker cannot run stops the service here rather than at Check.
	if err := check.ValidateAll(all); err != nil {
		return nil, fmt.Errorf("exercises: %w", err)
	}
	s := &Service{cfg: cfg, exercises: all, byID: map[string]*format.Exercise{}, created: cfg.Now(),
		console: func(line string) bool { _, err := console.Parse(line); return err == nil }}
	for _, ex := range all {
		s.byID[ex.ID] = ex
	}
	s.cfg.Env.Causes = s // mystery.go
	return s, nil
}

// Summary is one line of the exercise list.
type Summary struct {
	ID    string `json:"id"`
	Order int    `json:"order"`
	Title string `json:"title"`
	Goal  string `json:"goal"`
	// Available is false when this lab lacks what the exercise needs;
	// Unavailable then says what.
	Available        bool   `json:"available"`
	Unavailable      string `json:"unavailable,omitempty"`
	Steps            int    `json:"steps"`
	StepsPassed      int    `json:"stepsPassed"`
	Questions        int    `json:"questions"`
	QuestionsCorrect int    `json:"questionsCorrect"`
	Done             bool   `json:"done"`
}

// Detail is one exercise in one language with the student's progress.
type Detail struct {
	Summary
	Setup     string    `json:"setup"`
	Profiles  []string  `json:"profiles,omitempty"`
	Requires  []string  `json:"requires,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	// CurrentStep is the id of the first step not passed ("" when all
	// passed or there are none).
	CurrentStep string         `json:"currentStep"`
	Steps       []StepView     `json:"steps"`
	Quiz        []QuestionView `json:"quiz"`
	// *MysteryView: mystery-pending's service and causes (mystery.go).
	*MysteryView
}

// StepView is a step as the page shows it.
type StepView struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	Body     string        `json:"body"`
	Commands []CommandView `json:"commands"`
	Hints    []string      `json:"hints"`
	// Checks names what "check now" looks at, e.g. "serviceExternalIP".
	Checks   []string  `json:"checks"`
	Passed   bool      `json:"passed"`
	PassedAt time.Time `json:"passedAt,omitzero"`
	Attempts int       `json:"attempts"`
	// Locked: an earlier step has not passed yet.
	Locked bool `json:"locked"`
	// Explanation is shown once the step passed.
	Explanation string `json:"explanation,omitempty"`
}

// CommandView is one command to try. Console says whether the lab's
// console runs it; the others need a shell (pipes, sleep, jq).
type CommandView struct {
	Line    string `json:"line"`
	Console bool   `json:"console"`
}

// QuestionView is a quiz question. A choice's reasoning is shown once it
// was chosen; all of them once the question was answered correctly.
type QuestionView struct {
	ID       string       `json:"id"`
	Question string       `json:"question"`
	Choices  []ChoiceView `json:"choices"`
	Answered bool         `json:"answered"`
	Choice   *int         `json:"choice,omitempty"`
	Correct  bool         `json:"correct"`
	Attempts int          `json:"attempts"`
}

// ChoiceView is one choice; Why and Correct are set once revealed.
type ChoiceView struct {
	Text    string `json:"text"`
	Why     string `json:"why,omitempty"`
	Correct *bool  `json:"correct,omitempty"`
}

func normLang(lang string) (string, error) {
	switch lang {
	case "", format.LangEN:
		return format.LangEN, nil
	case format.LangJA:
		return format.LangJA, nil
	}
	return "", fmt.Errorf("%w: language %q (valid: ja, en)", ErrBadInput, lang)
}

func (s *Service) get(id string) (*format.Exercise, error) {
	ex, ok := s.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: no exercise %q", ErrNotFound, id)
	}
	return ex, nil
}

// availability says why this lab cannot run ex ("" when it can).
func (s *Service) availability(ex *format.Exercise) string {
	p := s.cfg.Env.Profile.Name
	if len(ex.Setup.Profiles) > 0 && !slices.Contains(ex.Setup.Profiles, p) {
		return fmt.Sprintf("needs the %v profile (this lab runs %s)", ex.Setup.Profiles, p)
	}
	status := s.cfg.Env.Controllers.Status()
	for _, c := range ex.Setup.Requires {
		if _, ok := status[c]; !ok {
			if c == "lbc" {
				return "needs the lbc add-on (start the lab with --addons lbc)"
			}
			return fmt.Sprintf("needs a %s controller, which the %s profile does not have", c, p)
		}
	}
	return ""
}

func (s *Service) startOf(ctx context.Context, id string) (time.Time, error) {
	t, ok, err := s.cfg.Store.Started(ctx, id)
	if err != nil || !ok {
		return s.created, err
	}
	return t, nil
}

func (s *Service) summary(ex *format.Exercise, lang string, steps map[string]progress.StepProgress, answers map[string]progress.Answer) Summary {
	sum := Summary{ID: ex.ID, Order: ex.Order, Title: ex.Title.In(i18n.Lang(lang)), Goal: ex.Goal.In(i18n.Lang(lang)),
		Steps: len(ex.Steps), Questions: len(ex.Quiz)}
	if why := s.availability(ex); why != "" {
		sum.Unavailable = why
	} else {
		sum.Available = true
	}
	for _, st := range ex.Steps {
		if steps[st.ID].Passed() {
			sum.StepsPassed++
		}
	}
	for _, q := range ex.Quiz {
		if answers[q.ID].EverCorrect {
			sum.QuestionsCorrect++
		}
	}
	sum.Done = sum.StepsPassed == sum.Steps && sum.QuestionsCorrect == sum.Questions
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
		out = append(out, s.summary(ex, lang, steps, answers))
	}
	return out, nil
}

// Get returns one exercise in lang with progress.
func (s *Service) Get(ctx context.Context, id, lang string) (Detail, error) {
	lang, err := normLang(lang)
	if err != nil {
		return Detail{}, err
	}
	ex, err := s.get(id)
	if err != nil {
		return Detail{}, err
	}
	steps, err := s.cfg.Store.Steps(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	answers, err := s.cfg.Store.Answers(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	start, err := s.startOf(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{
		Summary: s.summary(ex, lang, steps, answers), Setup: ex.Setup.About.In(i18n.Lang(lang)),
		Profiles: ex.Setup.Profiles, Requires: ex.Setup.Requires, StartedAt: start,
		Steps: []StepView{}, Quiz: []QuestionView{},
	}
	locked := false
	for _, st := range ex.Steps {
		p := steps[st.ID]
		v := StepView{ID: st.ID, Title: st.Title.In(i18n.Lang(lang)), Body: st.Body.In(i18n.Lang(lang)), Commands: []CommandView{}, Hints: []string{},
			Passed: p.Passed(), PassedAt: p.PassedAt, Attempts: p.Attempts, Locked: locked}
		for _, c := range st.Commands {
			v.Commands = append(v.Commands, CommandView{Line: c, Console: s.console(c)})
		}
		for _, h := range st.Hints {
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
	for _, q := range ex.Quiz {
		d.Quiz = append(d.Quiz, questionView(q, answers[q.ID], lang))
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

func questionView(q format.Question, a progress.Answer, lang string) QuestionView {
	v := QuestionView{ID: q.ID, Question: q.Question.In(i18n.Lang(lang)), Answered: a.Attempts > 0, Correct: a.Correct, Attempts: a.Attempts}
	if v.Answered {
		c := a.Choice
		v.Choice = &c
	}
	for i, c := range q.Choices {
		cv := ChoiceView{Text: c.Text.In(i18n.Lang(lang))}
		if a.EverCorrect || (v.Answered && i == a.Choice) {
			cv.Why = c.Why.In(i18n.Lang(lang))
			correct := c.Correct
			cv.Correct = &correct
		}
		v.Choices = append(v.Choices, cv)
	}
	return v
}

// CheckReport is the answer to "check now".
type CheckReport struct {
	Exercise string `json:"exercise"`
	// CurrentStep is the first step not passed after this check.
	CurrentStep string       `json:"currentStep"`
	Done        bool         `json:"done"`
	Steps       []StepResult `json:"steps"`
}

// Step statuses in a CheckReport.
const (
	StepPassed = "passed" // passed now or earlier
	StepFailed = "failed" // checked now and not passing yet
	StepLocked = "locked" // not checked: an earlier step has not passed
)

// StepResult is one step of a CheckReport.
type StepResult struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
	// Checked: this step's checks ran in this call (a step that passed
	// earlier stays passed and is not checked again).
	Checked     bool          `json:"checked"`
	PassedAt    time.Time     `json:"passedAt,omitzero"`
	Attempts    int           `json:"attempts"`
	Checks      []CheckResult `json:"checks,omitempty"`
	Explanation string        `json:"explanation,omitempty"`
}

// CheckResult is one check of a step.
type CheckResult struct {
	Kind   string `json:"kind"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

// Check evaluates the exercise against the lab, in step order: steps that
// passed before stay passed; the first step that has not is checked and,
// if every check holds, recorded as passed, and the next one is checked in
// turn; the steps after the first failing one are locked. Every check of
// a checked step runs, so the report says everything that is missing.
func (s *Service) Check(ctx context.Context, id, lang string) (CheckReport, error) {
	lang, err := normLang(lang)
	if err != nil {
		return CheckReport{}, err
	}
	ex, err := s.get(id)
	if err != nil {
		return CheckReport{}, err
	}
	if why := s.availability(ex); why != "" {
		return CheckReport{}, fmt.Errorf("%w: %s", ErrUnavailable, why)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	steps, err := s.cfg.Store.Steps(ctx, id)
	if err != nil {
		return CheckReport{}, err
	}
	start, err := s.startOf(ctx, id)
	if err != nil {
		return CheckReport{}, err
	}
	rep := CheckReport{Exercise: id, Steps: []StepResult{}}
	blocked := false
	for _, st := range ex.Steps {
		p := steps[st.ID]
		r := StepResult{ID: st.ID, Title: st.Title.In(i18n.Lang(lang)), PassedAt: p.PassedAt, Attempts: p.Attempts}
		switch {
		case p.Passed():
			r.Status = StepPassed
		case blocked:
			r.Status = StepLocked
		default:
			r.Checked = true
			pass := true
			for _, c := range st.Checks {
				o := check.Evaluate(ctx, s.cfg.Env, start, c)
				pass = pass && o.Pass
				r.Checks = append(r.Checks, CheckResult{Kind: c.Kind, Pass: o.Pass, Detail: o.Detail.In(i18n.Lang(lang))})
			}
			if ctx.Err() != nil {
				return CheckReport{}, ctx.Err()
			}
			p, err = s.cfg.Store.RecordAttempt(ctx, id, st.ID, pass, s.cfg.Now())
			if err != nil {
				return CheckReport{}, err
			}
			r.PassedAt, r.Attempts = p.PassedAt, p.Attempts
			if pass {
				r.Status = StepPassed
			} else {
				r.Status = StepFailed
				blocked = true
				rep.CurrentStep = st.ID
			}
		}
		if r.Status == StepPassed {
			r.Explanation = st.Explanation.In(i18n.Lang(lang))
		} else if rep.CurrentStep == "" {
			rep.CurrentStep = st.ID
		}
		rep.Steps = append(rep.Steps, r)
	}
	answers, err := s.cfg.Store.Answers(ctx, id)
	if err != nil {
		return CheckReport{}, err
	}
	rep.Done = rep.CurrentStep == ""
	for _, q := range ex.Quiz {
		if !answers[q.ID].EverCorrect {
			rep.Done = false
		}
	}
	return rep, nil
}

// AnswerResult is the answer to a quiz submission.
type AnswerResult struct {
	Question string `json:"question"`
	Choice   int    `json:"choice"`
	Correct  bool   `json:"correct"`
	// Why is the reasoning for the chosen answer.
	Why string `json:"why"`
	// View is the question after this answer, with every reasoning once
	// it was answered correctly.
	View QuestionView `json:"view"`
}

// Answer records a choice (0-based) for a question and says whether it
// is right, and why.
func (s *Service) Answer(ctx context.Context, id, question string, choice int, lang string) (AnswerResult, error) {
	lang, err := normLang(lang)
	if err != nil {
		return AnswerResult{}, err
	}
	ex, err := s.get(id)
	if err != nil {
		return AnswerResult{}, err
	}
	i := slices.IndexFunc(ex.Quiz, func(q format.Question) bool { return q.ID == question })
	if i < 0 {
		return AnswerResult{}, fmt.Errorf("%w: exercise %s has no question %q", ErrNotFound, id, question)
	}
	q := ex.Quiz[i]
	if choice < 0 || choice >= len(q.Choices) {
		return AnswerResult{}, fmt.Errorf("%w: choice %d (question %s has choices 0 to %d)", ErrBadInput, choice, question, len(q.Choices)-1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := q.Choices[choice]
	a, err := s.cfg.Store.RecordAnswer(ctx, id, question, choice, c.Correct, s.cfg.Now())
	if err != nil {
		return AnswerResult{}, err
	}
	return AnswerResult{Question: question, Choice: choice, Correct: c.Correct, Why: c.Why.In(i18n.Lang(lang)), View: questionView(q, a, lang)}, nil
}
