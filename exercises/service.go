package exercises

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/exercises/console"
	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/lab/history"
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
	// ErrNotCurrent: an answer for a step that is not the current one
	// (locked behind an earlier step, or already passed) (409).
	ErrNotCurrent = errors.New("not the current step")
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
	// OnProgress is told the id of an exercise whose progress changed
	// without an API call: a step passed by the automatic check (Run).
	// Optional; it must not block.
	OnProgress func(id string)
	// AutoCheckDelay is how long Run waits after the lab changed before
	// checking (changes in that time are checked together). Default 300ms.
	AutoCheckDelay time.Duration
	// Addr is the host:port the lab's API answers on, as a student types
	// it (`curl -s <Addr>/api/...`). The exercises are written for the
	// default, localhost:8080; commands shown are rewritten to Addr.
	// Default "localhost:8080".
	Addr string
}

// defaultAddr is the lab's address the exercises' commands are written with.
const defaultAddr = "localhost:8080"

// onThisLab rewrites a command written for the default address to the
// lab's own, so a lab started with --listen 127.0.0.1:9090 shows commands
// that reach it.
func (s *Service) onThisLab(cmd string) string {
	if s.cfg.Addr == defaultAddr {
		return cmd
	}
	return strings.ReplaceAll(cmd, defaultAddr+"/", s.cfg.Addr+"/")
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
	// runs is, per exercise reset since the process started, where its
	// history starts and where the current step's evidence starts. After
	// a restart (the history starts empty) an exercise has none and every
	// entry counts.
	runs map[string]*run
	// pace is the latency the last reset set for its classroom pace (nil
	// when the last reset set none).
	pace *pace
	// active is the exercise the student is on: the last one reset,
	// checked or answered through the API. Only it is checked
	// automatically, so that an action meant for one exercise does not
	// pass another's step behind the student's back.
	active string
	// seedMu guards the lab's seed, read from the store once.
	seedMu  sync.Mutex
	seedVal uint64
	seedOK  bool
}

// run is one exercise's place in the history.
type run struct {
	startSeq uint64 // the reset's mark
	since    uint64 // when the last step passed (startSeq before)
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
	if cfg.AutoCheckDelay <= 0 {
		cfg.AutoCheckDelay = 300 * time.Millisecond
	}
	if cfg.Addr == "" {
		cfg.Addr = defaultAddr
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
	s := &Service{cfg: cfg, exercises: all, byID: map[string]*format.Exercise{}, created: cfg.Now(), runs: map[string]*run{},
		console: func(line string) bool { _, err := console.Parse(line); return err == nil }}
	for _, ex := range all {
		s.byID[ex.ID] = ex
	}
	s.cfg.Env.Causes = s // mystery.go
	return s, nil
}

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

// availability says why this lab cannot run ex ("" when it can), in
// English for errors and logs; unavailable says it in both languages for
// the page.
func (s *Service) availability(ex *format.Exercise) string { return s.unavailable(ex).EN }

func (s *Service) unavailable(ex *format.Exercise) i18n.Text {
	p := s.cfg.Env.Profile.Name
	if len(ex.Setup.Profiles) > 0 && !slices.Contains(ex.Setup.Profiles, p) {
		list := strings.Join(ex.Setup.Profiles, ", ")
		return i18n.Textf("%[1]s プロファイルが必要です (このラボは %[2]s で動いています)", "needs the %[1]s profile (this lab runs %[2]s)", list, p)
	}
	status := s.cfg.Env.Controllers.Status()
	for _, c := range ex.Setup.Requires {
		if _, ok := status[c]; !ok {
			if c == "lbc" {
				return i18n.Text{JA: "lbc アドオンが必要です (ラボを --addons lbc で起動してください)", EN: "needs the lbc add-on (start the lab with --addons lbc)"}
			}
			return i18n.Textf("%[1]s controller が必要ですが、%[2]s プロファイルにはありません", "needs a %[1]s controller, which the %[2]s profile does not have", c, p)
		}
	}
	return i18n.Text{}
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

func (s *Service) summary(ex *format.Exercise, lang string, steps map[string]progress.StepProgress, answers map[string]progress.Answer, n counts) Summary {
	sum := Summary{ID: ex.ID, Order: ex.Order, Title: ex.Title.In(i18n.Lang(lang)), Goal: ex.Goal.In(i18n.Lang(lang)), Minutes: ex.Minutes,
		Steps: len(ex.Steps), Questions: len(ex.Quiz), WrongAnswers: n.wrong, HintsOpened: n.hints, Started: n.started}
	if why := s.unavailable(ex); why.EN != "" {
		sum.Unavailable = why.In(i18n.Lang(lang))
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
	typed, err := s.cfg.Store.StepAnswers(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	start, err := s.startOf(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	hints, err := s.cfg.Store.Hints(ctx, id)
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
		v := StepView{ID: st.ID, Title: st.Title.In(i18n.Lang(lang)), Body: st.Body.In(i18n.Lang(lang)), Commands: []CommandView{}, Hints: []string{},
			HintCount: len(st.Hints), Passed: p.Passed(), PassedAt: p.PassedAt, Attempts: p.Attempts, Locked: locked, Solution: []SolutionView{}}
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
	for _, q := range ex.Quiz {
		d.Quiz = append(d.Quiz, questionView(q, answers[q.ID], lang, choiceOrder(seed, id, q.ID, len(q.Choices))))
	}
	if d.Done {
		d.Ending = ex.Ending.In(i18n.Lang(lang))
	}
	if rs, ok, err := s.cfg.Store.Reset(ctx, id); err != nil {
		return Detail{}, err
	} else if ok {
		d.Reset = &ResetNote{State: rs.State, Note: rs.Note, At: rs.At}
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

// questionView shows the choices in the student's order (order[i] is the
// file's index of the choice shown at i), the first answer's choice and
// result (a quiz counts the first try) and, once answered, every choice's
// reasoning.
func questionView(q format.Question, a progress.Answer, lang string, order []int) QuestionView {
	v := QuestionView{ID: q.ID, Question: q.Question.In(i18n.Lang(lang)), Answered: a.Attempts > 0, Correct: a.Attempts > 0 && a.FirstCorrect, Attempts: a.Attempts}
	if v.Answered {
		if c := slices.Index(order, a.FirstChoice); c >= 0 {
			v.Choice = &c
		}
	}
	for _, i := range order {
		c := q.Choices[i]
		cv := ChoiceView{Text: c.Text.In(i18n.Lang(lang))}
		if v.Answered {
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

// Check evaluates the current step (the first that has not passed)
// against the lab and its history: its evidence kinds look only at what
// was recorded after the previous step passed (after the reset for the
// first step), its state kinds at the lab as it is, and a step that asks
// for a typed answer needs the right one. One step at a time: a step that
// passes records the history's position as where the next step's
// evidence starts, so one action never passes two steps. The steps after
// the current one are locked. Every check of the current step runs, so
// the report says everything that is missing.
func (s *Service) Check(ctx context.Context, id, lang string) (CheckReport, error) {
	return s.check(ctx, id, lang, false)
}

// check is Check; auto (the automatic check) records no failed attempt.
func (s *Service) check(ctx context.Context, id, lang string, auto bool) (CheckReport, error) {
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
	if err := s.resetWentThrough(ctx, id); err != nil {
		return CheckReport{}, err
	}
	steps, err := s.cfg.Store.Steps(ctx, id)
	if err != nil {
		return CheckReport{}, err
	}
	typed, err := s.cfg.Store.StepAnswers(ctx, id)
	if err != nil {
		return CheckReport{}, err
	}
	start, err := s.startOf(ctx, id)
	if err != nil {
		return CheckReport{}, err
	}
	r := s.runOf(id)
	if !auto {
		s.active = id
	}
	rep := CheckReport{Exercise: id, Steps: []StepResult{}}
	checked := false
	for _, st := range ex.Steps {
		p := steps[st.ID]
		res := StepResult{ID: st.ID, Title: st.Title.In(i18n.Lang(lang)), PassedAt: p.PassedAt, Attempts: p.Attempts}
		switch {
		case p.Passed():
			res.Status = StepPassed
		case checked:
			res.Status = StepLocked
		default:
			checked = true
			res.Checked = true
			// Where the next step's evidence will start: taken before
			// reading, so nothing recorded during the check is lost.
			mark := s.cfg.Env.History.Last()
			in := check.Input{Start: start, StartSeq: r.startSeq, Since: r.since, Exercise: id, Step: st.ID}
			pass := true
			for _, c := range st.Checks {
				o := check.EvaluateStep(ctx, s.cfg.Env, in, c)
				pass = pass && o.Pass
				res.Checks = append(res.Checks, CheckResult{Kind: c.Kind, Pass: o.Pass, Detail: o.Detail.In(i18n.Lang(lang))})
			}
			if st.Answer != nil {
				a := typed[st.ID]
				ok := a.Correct
				detail := i18n.Text{JA: "答えがまだ入力されていません。", EN: "no answer typed yet."}
				switch {
				case a.Correct:
					detail = i18n.Textf("答え %s は正解です", "the answer %s is right", a.Value)
				case a.Attempts > 0:
					detail = i18n.Textf("答え %s はラボの値と一致しません", "the answer %s does not match the lab", a.Value)
				}
				pass = pass && ok
				res.Checks = append(res.Checks, CheckResult{Kind: "answer", Pass: ok, Detail: detail.In(i18n.Lang(lang))})
			}
			if ctx.Err() != nil {
				return CheckReport{}, ctx.Err()
			}
			if pass || !auto {
				p, err = s.cfg.Store.RecordAttempt(ctx, id, st.ID, pass, s.cfg.Now())
				if err != nil {
					return CheckReport{}, err
				}
			}
			res.PassedAt, res.Attempts = p.PassedAt, p.Attempts
			if pass {
				res.Status = StepPassed
				r.since = mark
			} else {
				res.Status = StepFailed
			}
		}
		if res.Status == StepPassed {
			res.Explanation = st.Explanation.In(i18n.Lang(lang))
		} else if rep.CurrentStep == "" {
			rep.CurrentStep = st.ID
		}
		rep.Steps = append(rep.Steps, res)
	}
	answers, err := s.cfg.Store.Answers(ctx, id)
	if err != nil {
		return CheckReport{}, err
	}
	rep.Done = rep.CurrentStep == ""
	for _, q := range ex.Quiz {
		if answers[q.ID].Attempts == 0 {
			rep.Done = false
		}
	}
	return rep, nil
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
	lang, err := normLang(lang)
	if err != nil {
		return StepAnswerResult{}, err
	}
	ex, err := s.get(id)
	if err != nil {
		return StepAnswerResult{}, err
	}
	i := slices.IndexFunc(ex.Steps, func(st format.Step) bool { return st.ID == step })
	if i < 0 {
		return StepAnswerResult{}, fmt.Errorf("%w: exercise %s has no step %q", ErrNotFound, id, step)
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
			return StepAnswerResult{}, fmt.Errorf("%w: step %s comes after %s, which has not passed", ErrNotCurrent, step, before.ID)
		}
	}
	if steps[step].Passed() {
		s.mu.Unlock()
		return StepAnswerResult{}, fmt.Errorf("%w: step %s has passed already", ErrNotCurrent, step)
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

// resetWentThrough refuses to check an exercise whose last reset failed
// or is still to be finished: its lab is not the exercise's start, so a
// step could pass, or fail, for the wrong reason. Call with mu.
func (s *Service) resetWentThrough(ctx context.Context, id string) error {
	rs, ok, err := s.cfg.Store.Reset(ctx, id)
	if err != nil || !ok {
		return err
	}
	switch rs.State {
	case progress.ResetFailed:
		return fmt.Errorf("%w: the last reset of %s failed (%s): reset it again", ErrUnavailable, id, rs.Note)
	case progress.ResetRunning:
		return fmt.Errorf("%w: the reset of %s was interrupted and is not finished yet", ErrUnavailable, id)
	}
	return nil
}

// FinishInterrupted runs again every reset the progress store says was
// running when the lab stopped (a crash or kill in the middle leaves the
// lab half reset: the mystery's Service deleted, no cause planted), with
// the options it was asked with, and records on the exercise that it was
// finished at start. Run calls it first; it returns the first error.
func (s *Service) FinishInterrupted(ctx context.Context) error {
	running, err := s.cfg.Store.ResetsRunning(ctx)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(running))
	for id := range running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var errs []error
	for _, id := range ids {
		rs := running[id]
		ex, ok := s.byID[id]
		if !ok {
			// An exercise this version no longer has: forget the record.
			errs = append(errs, s.cfg.Store.EndReset(ctx, id, "", "", s.cfg.Now()))
			continue
		}
		if why := s.availability(ex); why != "" {
			errs = append(errs, s.cfg.Store.FailReset(ctx, id, progressKeys(id), rs.Options,
				"the lab stopped in the middle of this reset, and this lab cannot run the exercise: "+why, s.cfg.Now()))
			continue
		}
		var opts ResetOptions
		if rs.Options != "" {
			if err := json.Unmarshal([]byte(rs.Options), &opts); err != nil {
				opts = ResetOptions{}
			}
		}
		note := fmt.Sprintf("the lab stopped in the middle of the reset of %s at %s; the reset was finished when the lab started again",
			id, rs.At.Format(time.RFC3339))
		s.cfg.Logger.Warn("finishing an interrupted reset", "exercise", id)
		s.mu.Lock()
		err := s.recordedReset(ctx, ex, opts, note)
		s.mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("finishing the interrupted reset of %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

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

func passedAll(ex *format.Exercise, steps map[string]progress.StepProgress) bool {
	for _, st := range ex.Steps {
		if !steps[st.ID].Passed() {
			return false
		}
	}
	return true
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
	seed, err := s.seed(ctx)
	if err != nil {
		return AnswerResult{}, err
	}
	// choice is a position in the order the student sees; the store keeps
	// the file's index, which does not depend on the order.
	order := choiceOrder(seed, id, question, len(q.Choices))
	s.mu.Lock()
	defer s.mu.Unlock()
	c := q.Choices[order[choice]]
	a, err := s.cfg.Store.RecordAnswer(ctx, id, question, order[choice], c.Correct, s.cfg.Now())
	if err != nil {
		return AnswerResult{}, err
	}
	return AnswerResult{Question: question, Choice: choice, Correct: c.Correct, Why: c.Why.In(i18n.Lang(lang)), View: questionView(q, a, lang, order)}, nil
}

// seed is the lab's own seed for the order of choices (progress.Store.Seed),
// read once.
func (s *Service) seed(ctx context.Context) (uint64, error) {
	s.seedMu.Lock()
	defer s.seedMu.Unlock()
	if s.seedOK {
		return s.seedVal, nil
	}
	v, err := s.cfg.Store.Seed(ctx)
	if err != nil {
		return 0, err
	}
	s.seedVal, s.seedOK = v, true
	return v, nil
}

// choiceOrder is the order a lab shows a question's choices in: order[i]
// is the file's index of the choice at position i. It depends only on the
// lab's seed, the exercise and the question, so a student sees one order
// on every load and after every restart, and the files can list the right
// choice wherever they like.
func choiceOrder(seed uint64, exercise, question string, n int) []int {
	h := fnv.New64a()
	h.Write([]byte(exercise))
	h.Write([]byte{0})
	h.Write([]byte(question))
	return rand.New(rand.NewPCG(seed, h.Sum64())).Perm(n)
}

// RevealHint opens the next hint of the current step of exercise id; once
// every hint is open, one more call reveals the solution. It returns the
// exercise as Get does.
func (s *Service) RevealHint(ctx context.Context, id, step, lang string) (Detail, error) {
	if _, err := normLang(lang); err != nil {
		return Detail{}, err
	}
	ex, err := s.get(id)
	if err != nil {
		return Detail{}, err
	}
	i := slices.IndexFunc(ex.Steps, func(st format.Step) bool { return st.ID == step })
	if i < 0 {
		return Detail{}, fmt.Errorf("%w: exercise %s has no step %q", ErrNotFound, id, step)
	}
	s.mu.Lock()
	steps, err := s.cfg.Store.Steps(ctx, id)
	if err == nil {
		for _, before := range ex.Steps[:i] {
			if !steps[before.ID].Passed() {
				err = fmt.Errorf("%w: step %s comes after %s, which has not passed", ErrNotCurrent, step, before.ID)
				break
			}
		}
	}
	if err == nil && steps[step].Passed() {
		err = fmt.Errorf("%w: step %s has passed already", ErrNotCurrent, step)
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
