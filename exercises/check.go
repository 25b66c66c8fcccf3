package exercises

import (
	"context"
	"fmt"
	"time"

	"github.com/ccmlab/ccmlab/exercises/check"
	"github.com/ccmlab/ccmlab/internal/i18n"
)

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
	ex, lang, err := s.lookup(id, lang)
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
	rec, err := s.stepRecord(ctx, id)
	if err != nil {
		return CheckReport{}, err
	}
	steps, typed, start := rec.steps, rec.typed, rec.start
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
