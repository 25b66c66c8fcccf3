package progress

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func TestProgressSurvivesReopening(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "progress.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 4, 1, 10, 0, 0, 123456789, time.UTC)
	if err := s.Restart(ctx, "no-ccm", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordAttempt(ctx, "no-ccm", "stuck", false, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	p, err := s.RecordAttempt(ctx, "no-ccm", "stuck", true, t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !p.PassedAt.Equal(t0.Add(2*time.Second)) || p.Attempts != 2 {
		t.Fatalf("after two attempts: %+v", p)
	}
	// A later check of a passed step keeps the first pass time.
	if p, _ = s.RecordAttempt(ctx, "no-ccm", "stuck", true, t0.Add(time.Hour)); !p.PassedAt.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("pass time moved: %+v", p)
	}
	if _, err := s.RecordAnswer(ctx, "review", "pending-means", 0, false, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordAnswer(ctx, "review", "pending-means", 1, true, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordAnswer(ctx, "review", "pending-means", 2, false, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	started, ok, err := s.Started(ctx, "no-ccm")
	if err != nil || !ok || !started.Equal(t0) {
		t.Fatalf("started = %v %v %v, want %v", started, ok, err, t0)
	}
	steps, err := s.Steps(ctx, "no-ccm")
	if err != nil {
		t.Fatal(err)
	}
	if got := steps["stuck"]; !got.PassedAt.Equal(t0.Add(2*time.Second)) || got.Attempts != 3 {
		t.Fatalf("after reopening: %+v", got)
	}
	answers, err := s.Answers(ctx, "review")
	if err != nil {
		t.Fatal(err)
	}
	if a := answers["pending-means"]; a.Choice != 2 || a.Correct || !a.EverCorrect || a.Attempts != 3 {
		t.Fatalf("answer after reopening: %+v", a)
	}

	// Restart clears one exercise only.
	if err := s.Restart(ctx, "no-ccm", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if steps, _ := s.Steps(ctx, "no-ccm"); len(steps) != 0 {
		t.Errorf("steps after restart: %v", steps)
	}
	if answers, _ := s.Answers(ctx, "review"); len(answers) != 1 {
		t.Errorf("another exercise's answers went too: %v", answers)
	}
	if _, _, err := s.Started(ctx, "never"); err != nil {
		t.Errorf("Started of a fresh exercise: %v", err)
	}
}

// TestWrongHintsSeed: wrong answers are counted per exercise (quiz and
// typed), hints are opened one at a time up to the bound and cleared by a
// restart, and the lab's seed is drawn once and kept across reopening.
func TestWrongHintsSeed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "progress.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC)
	for _, a := range []struct {
		q       string
		correct bool
	}{{"q1", false}, {"q1", true}, {"q1", false}, {"q2", true}} {
		if _, err := s.RecordAnswer(ctx, "review", a.q, 0, a.correct, t0); err != nil {
			t.Fatal(err)
		}
	}
	for _, ok := range []bool{false, false, true} {
		if _, err := s.RecordStepAnswer(ctx, "review", "s1", "v", ok, t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RecordAnswer(ctx, "other", "q1", 0, false, t0); err != nil {
		t.Fatal(err)
	}
	if n, err := s.WrongAnswers(ctx, "review"); err != nil || n != 4 {
		t.Fatalf("WrongAnswers(review) = %d, %v; want 4", n, err)
	}
	for i, want := range []int{1, 2, 2} {
		if n, err := s.RevealHint(ctx, "review", "s1", 2); err != nil || n != want {
			t.Fatalf("RevealHint #%d = %d, %v; want %d", i, n, err, want)
		}
	}
	seed, err := s.Seed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx, "review", t0); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.Hints(ctx, "review"); len(h) != 0 {
		t.Fatalf("hints after restart: %v", h)
	}
	if n, _ := s.WrongAnswers(ctx, "review"); n != 0 {
		t.Fatalf("wrong answers after restart: %d", n)
	}
	s.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if again, err := s.Seed(ctx); err != nil || again != seed {
		t.Fatalf("seed after reopening = %d, %v; want %d", again, err, seed)
	}
	if n, _ := s.WrongAnswers(ctx, "other"); n != 1 {
		t.Fatalf("WrongAnswers(other) = %d, want 1", n)
	}
}
