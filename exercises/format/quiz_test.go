package format

import (
	"testing"
	"unicode/utf8"

	"github.com/ccmlab/ccmlab/internal/i18n"
)

// TestQuizChoicesGiveNothingAway: a student who picks the longest (or the
// shortest) choice must do no better than chance. The service shuffles the
// order per lab (exercises.choiceOrder), so position is covered there;
// here, the length of the texts, in each language:
//   - the right choice is at least as long as every other in at most a
//     third of the questions: with three choices, what a blind pick of the
//     longest gets;
//   - it is the shortest in at most half of them, so that rewriting the
//     right answers short does not become the new tell;
//   - it is never more than 1.5 times the mean length of the others: a
//     choice that much longer reads as the careful one whatever its rank.
func TestQuizChoicesGiveNothingAway(t *testing.T) {
	all, err := LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range []i18n.Lang{i18n.JA, i18n.EN} {
		n, longest, shortest := 0, 0, 0
		for _, ex := range all {
			for _, q := range ex.Quiz {
				n++
				right, others, sum := 0, 0, 0
				isLongest, isShortest := true, true
				for _, c := range q.Choices {
					if c.Correct {
						right = utf8.RuneCountInString(c.Text.In(lang))
					}
				}
				for _, c := range q.Choices {
					if c.Correct {
						continue
					}
					l := utf8.RuneCountInString(c.Text.In(lang))
					others++
					sum += l
					if l > right {
						isLongest = false
					}
					if l <= right {
						isShortest = false
					}
				}
				if isLongest {
					longest++
				}
				if isShortest {
					shortest++
				}
				if mean := float64(sum) / float64(others); float64(right) > 1.5*mean {
					t.Errorf("%s %s/%s: the right choice is %d characters, %.1f times the others' mean", lang, ex.ID, q.ID, right, float64(right)/mean)
				}
			}
		}
		if max := (n + 2) / 3; longest > max {
			t.Errorf("%s: the right choice is the longest in %d of %d questions (at most %d)", lang, longest, n, max)
		}
		if max := (n + 1) / 2; shortest > max {
			t.Errorf("%s: the right choice is the shortest in %d of %d questions (at most %d)", lang, shortest, n, max)
		}
		t.Logf("%s: %d questions, the right choice longest in %d, shortest in %d", lang, n, longest, shortest)
	}
}

// TestJapaneseTextsHaveNoEnglish: every Japanese text of every file (also
// the hints, solutions and reasons the API sends only later) is Japanese:
// no run of three plain English words outside commands and names
// (i18n.EnglishSentence).
func TestJapaneseTextsHaveNoEnglish(t *testing.T) {
	all, err := LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range all {
		for where, text := range ex.texts() {
			if p := i18n.EnglishSentence(text.JA); p != "" {
				t.Errorf("%s %s: %q in %q", ex.ID, where, p, text.JA)
			}
		}
	}
}
