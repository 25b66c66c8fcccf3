package exercises

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"github.com/ccmlab/ccmlab/exercises/format"
	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/i18n"
	"github.com/ccmlab/ccmlab/internal/labapi"
)

// A quiz question and its choices as the page shows them (labapi).
type (
	QuestionView = labapi.QuestionView
	ChoiceView   = labapi.ChoiceView
)

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
	ex, lang, err := s.lookup(id, lang)
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
	if err := s.quizOpen(ctx, ex); err != nil {
		return AnswerResult{}, err
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

// quizOpen refuses a quiz answer while a step of ex has not passed: the
// quiz asks what the steps show, so it opens after them.
func (s *Service) quizOpen(ctx context.Context, ex *format.Exercise) error {
	steps, err := s.cfg.Store.Steps(ctx, ex.ID)
	if err != nil {
		return err
	}
	for _, st := range ex.Steps {
		if !steps[st.ID].Passed() {
			return errText(ErrNotCurrent,
				fmt.Sprintf("%s のクイズは、ステップをすべて通ると開きます (ステップ %s がまだです)", ex.ID, st.ID),
				fmt.Sprintf("the quiz of %s opens once its steps have passed (step %s has not)", ex.ID, st.ID))
		}
	}
	return nil
}
