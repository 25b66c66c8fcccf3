package exercises

import (
	"context"
	"errors"
	"testing"
)

// passSteps records every step of exercise id as passed, as the checker
// would once the student did the work.
func passSteps(t *testing.T, s *Service, id string) {
	t.Helper()
	for _, st := range s.byID[id].Steps {
		if _, err := s.cfg.Store.RecordAttempt(context.Background(), id, st.ID, true, s.cfg.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLockedStepsAndQuizSendNothingToRead: before the steps that lead to
// them have passed, a step sends only its title and a quiz question only
// its id (the API refuses an answer with ErrNotCurrent); once every step
// has passed, all of it is sent and the quiz answers.
func TestLockedStepsAndQuizSendNothingToRead(t *testing.T) {
	s, err := New(Config{Env: fakeEnv(t, "aws", fakeControllers{"node": true, "nodelifecycle": true, "route": true, "service": true}), Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tested := 0
	for _, ex := range s.exercises {
		if len(ex.Steps) < 2 || len(ex.Quiz) == 0 {
			continue
		}
		tested++
		t.Run(ex.ID, func(t *testing.T) {
			for _, lang := range []string{"en", "ja"} {
				d, err := s.Get(ctx, ex.ID, lang)
				if err != nil {
					t.Fatal(err)
				}
				if d.Steps[0].Locked || d.Steps[0].Body == "" {
					t.Errorf("%s: first step %+v, want open with its body", lang, d.Steps[0])
				}
				for _, st := range d.Steps[1:] {
					if !st.Locked || st.Title == "" || st.Body != "" || len(st.Commands) != 0 || len(st.Checks) != 0 || st.Answer != nil || st.HintCount != 0 || st.SolutionHidden {
						t.Errorf("%s: locked step sends %+v", lang, st)
					}
				}
				for _, q := range d.Quiz {
					if !q.Locked || q.Question != "" || len(q.Choices) != 0 {
						t.Errorf("%s: quiz before the steps sends %+v", lang, q)
					}
				}
			}
			if _, err := s.Answer(ctx, ex.ID, ex.Quiz[0].ID, 0, "en"); !errors.Is(err, ErrNotCurrent) {
				t.Errorf("answer before the steps: %v, want ErrNotCurrent", err)
			}
			passSteps(t, s, ex.ID)
			d, err := s.Get(ctx, ex.ID, "en")
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range d.Steps {
				if st.Locked || st.Body == "" {
					t.Errorf("passed step %+v", st)
				}
			}
			for _, q := range d.Quiz {
				if q.Locked || q.Question == "" || len(q.Choices) == 0 {
					t.Errorf("quiz after the steps: %+v", q)
				}
			}
			if _, err := s.Answer(ctx, ex.ID, ex.Quiz[0].ID, 0, "en"); err != nil {
				t.Errorf("answer after the steps: %v", err)
			}
		})
	}
	if tested == 0 {
		t.Fatal("no exercise with steps and a quiz")
	}
}
