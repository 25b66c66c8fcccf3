package exercises

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/ccmlab/ccmlab/internal/i18n"
)

// notText are the JSON keys whose values are names, ids or commands, not
// sentences: they stay as the lab and kubectl spell them.
var notText = []string{"id", "kind", "checks", "line", "command", "profiles", "requires", "latency", "cloudLatency",
	"currentStep", "state", "service", "answer", "cause", "exercise", "status", "value", "step", "question"}

// englishIn walks a JSON value and reports every string (outside notText
// keys, and outside {ja, en} pairs, which carry both languages on purpose)
// with an English sentence in it.
func englishIn(v any, path string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		if _, ja := x["ja"]; ja {
			if _, en := x["en"]; en {
				return
			}
		}
		for k, e := range x {
			if slices.Contains(notText, k) {
				continue
			}
			englishIn(e, path+"."+k, out)
		}
	case []any:
		for i, e := range x {
			englishIn(e, fmt.Sprintf("%s[%d]", path, i), out)
		}
	case string:
		if p := i18n.EnglishSentence(x); p != "" {
			*out = append(*out, fmt.Sprintf("%s: %q in %q", path, p, x))
		}
	}
}

func englishInJSON(t *testing.T, v any, path string) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	var out []string
	englishIn(x, path, &out)
	return out
}

// TestJapaneseAPIHasNoEnglish: what GET /api/exercises?lang=ja, GET
// /api/exercises/{id}?lang=ja and the answers to a check, a quiz answer
// and a hint return has no English sentence (i18n.EnglishSentence: three
// plain English words in a row outside commands and names), in a lab that
// runs every exercise and in one that runs few (the reasons why not).
func TestJapaneseAPIHasNoEnglish(t *testing.T) {
	ctx := context.Background()
	for _, profile := range []string{"aws", "kubevirt"} {
		ctrl := fakeControllers{"node": true, "nodelifecycle": true}
		if profile == "aws" {
			ctrl["route"], ctrl["service"] = true, true
		}
		s, err := New(Config{Env: fakeEnv(t, profile, ctrl), Store: openStore(t)})
		if err != nil {
			t.Fatal(err)
		}
		var bad []string
		list, err := s.List(ctx, "ja")
		if err != nil {
			t.Fatal(err)
		}
		bad = append(bad, englishInJSON(t, list, profile+" list")...)
		for _, sum := range list {
			id := sum.ID
			ex := s.byID[id]
			if len(ex.Steps) > 0 {
				for range len(ex.Steps[0].Hints) + 1 {
					if _, err := s.RevealHint(ctx, id, ex.Steps[0].ID, "ja"); err != nil {
						t.Fatal(err)
					}
				}
				if sum.Available {
					rep, err := s.Check(ctx, id, "ja")
					if err != nil {
						t.Fatalf("check %s: %v", id, err)
					}
					bad = append(bad, englishInJSON(t, rep, profile+" "+id+" check")...)
				}
			}
			// The quiz opens once the steps have passed.
			passSteps(t, s, id)
			for _, q := range ex.Quiz {
				res, err := s.Answer(ctx, id, q.ID, 0, "ja")
				if err != nil {
					t.Fatal(err)
				}
				bad = append(bad, englishInJSON(t, res, profile+" "+id+" answer")...)
			}
			d, err := s.Get(ctx, id, "ja")
			if err != nil {
				t.Fatal(err)
			}
			bad = append(bad, englishInJSON(t, d, profile+" "+id)...)
		}
		if profile == "aws" {
			bad = append(bad, mysteryEnglish(t, s)...)
		}
		for _, b := range bad {
			t.Error(b)
		}
	}
}

// mysteryEnglish names every wrong cause in Japanese (each view carries
// that cause's nudge), then the right one (its reasoning), with the cause
// hidden as a reset would hide it, and reports English in the views.
func mysteryEnglish(t *testing.T, s *Service) []string {
	t.Helper()
	ctx := context.Background()
	if err := s.cfg.Store.Restart(ctx, MysteryID, s.cfg.Now()); err != nil {
		t.Fatal(err)
	}
	ids := CauseIDs()
	if _, err := s.cfg.Store.RecordAnswer(ctx, hiddenKey, rowHiddenCause, 0, false, s.cfg.Now()); err != nil {
		t.Fatal(err)
	}
	var bad []string
	// Only the first answer counts: each wrong cause is named after a
	// reset of the answers, then the right one.
	for _, id := range append(ids[1:], ids[0]) {
		if err := s.cfg.Store.Restart(ctx, MysteryID, s.cfg.Now()); err != nil {
			t.Fatal(err)
		}
		v, err := s.NameCause(ctx, MysteryID, id, "ja")
		if err != nil {
			t.Fatal(err)
		}
		if !v.Named || (id == ids[0]) != (v.Nudge == "") || v.Why == "" {
			t.Errorf("naming %s: %+v", id, v)
		}
		bad = append(bad, englishInJSON(t, v, "mystery "+id)...)
	}
	return bad
}
