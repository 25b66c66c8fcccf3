package exercises

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ccmlab/ccmlab/exercises/progress"
	"github.com/ccmlab/ccmlab/internal/i18n"
)

// The tests in this file need no control plane either (service_test.go).

// availableWithSteps is an exercise the lab can run that has steps (a
// reset of it touches the lab), other than the diagnosis challenge.
func availableWithSteps(t *testing.T, s *Service) string {
	t.Helper()
	for _, ex := range s.exercises {
		if len(ex.Steps) > 0 && ex.ID != MysteryID && s.availability(ex) == "" {
			return ex.ID
		}
	}
	t.Fatal("no available exercise with steps")
	return ""
}

// resetNoteIn is the note GET /api/exercises/{id}?lang= shows.
func resetNoteIn(t *testing.T, s *Service, id, lang string) *ResetNote {
	t.Helper()
	d, err := s.Get(context.Background(), id, lang)
	if err != nil {
		t.Fatal(err)
	}
	return d.Reset
}

// A reset note is said in the language asked for: Japanese on ?lang=ja
// (the program's error quoted as printed), the error itself in English.
// Notes kept before they had two languages still read.
func TestResetNoteInBothLanguages(t *testing.T) {
	ctx := context.Background()
	// expect reads the note GET /api/exercises/{id} shows in both
	// languages: failed, English wantEN (any when ""), and in Japanese
	// unless old (a note kept before notes had two languages).
	expect := func(t *testing.T, s *Service, id, wantEN string, old bool) {
		t.Helper()
		en := resetNoteIn(t, s, id, "en")
		if en == nil || en.State != progress.ResetFailed || en.Note == "" || wantEN != "" && en.Note != wantEN {
			t.Fatalf("the English note is %+v, want %q", en, wantEN)
		}
		ja := resetNoteIn(t, s, id, "ja")
		if old {
			if ja.Note != en.Note {
				t.Errorf("an old note reads %q in Japanese, %q in English", ja.Note, en.Note)
			}
			return
		}
		if why := i18n.NotJapanese(ja.Note); why == "no Japanese in it" {
			t.Errorf("the Japanese note %q has %s", ja.Note, why)
		}
		if p := i18n.EnglishSentence(ja.Note); p != "" {
			t.Errorf("the Japanese note %q has the English sentence %q", ja.Note, p)
		}
	}

	// No kubelets over a fake clientset: no node ever gets Ready, so a
	// reset that touches the lab fails.
	ctrl := fakeControllers{"node": true, "nodelifecycle": true, "route": true, "service": true}
	s, err := New(Config{Env: fakeEnv(t, "aws", ctrl), Store: openStore(t), SettleTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	id := availableWithSteps(t, s)
	resetErr := s.Reset(ctx, id)
	if resetErr == nil {
		t.Fatal("a reset over a lab without kubelets went through")
	}
	expect(t, s, id, resetErr.Error(), false)
	// The error a check answers with names the English note, not the
	// stored form.
	if _, err := s.Check(ctx, id, "en"); err == nil || !strings.Contains(err.Error(), resetErr.Error()) {
		t.Errorf("checking after the failed reset: %v", err)
	}

	if err := s.cfg.Store.FailReset(ctx, id, progressKeys(id), "", "an old note", s.cfg.Now()); err != nil {
		t.Fatal(err)
	}
	expect(t, s, id, "an old note", true)

	// Interrupted, and at the next start the lab cannot run the exercise
	// (a kubevirt lab has no Route controller): recorded as failed.
	kv, err := New(Config{Env: fakeEnv(t, "kubevirt", fakeControllers{"node": true, "nodelifecycle": true}), Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	unavailable := ""
	for _, ex := range kv.exercises {
		if len(ex.Steps) > 0 && kv.availability(ex) != "" {
			unavailable = ex.ID
			break
		}
	}
	if unavailable == "" {
		t.Fatal("every exercise runs on kubevirt")
	}
	if err := kv.cfg.Store.BeginReset(ctx, unavailable, progressKeys(unavailable), "", kv.cfg.Now()); err != nil {
		t.Fatal(err)
	}
	if err := kv.FinishInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	expect(t, kv, unavailable, "", false)
}
