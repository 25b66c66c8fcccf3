package check

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ccmlab/ccmlab/internal/i18n"
)

// internalWords are what verdicts used to show in place of words: the
// parameters' ids and placeholders a student cannot read.
var internalWords = regexp.MustCompile(`\b(` + strings.Join(camelCase(changes()), "|") + `|notccm|time\(s\))\b|\(any\)|written by \?| \* |\(\*\)`)

// camelCase keeps the ids that are no English word (ingressSet, not
// created).
func camelCase(ids []string) []string {
	var out []string
	for _, id := range ids {
		if strings.ToLower(id) != id {
			out = append(out, id)
		}
	}
	return out
}

// TestVerdictsReadAsSentences: every verdict of every table case (passing
// and failing) says what happened in words: no parameter ids ("ingressSet",
// "notccm"), no "*" for anyone, no "?" for an unknown writer, and its
// Japanese has no English sentence (i18n.EnglishSentence).
func TestVerdictsReadAsSentences(t *testing.T) {
	for _, tc := range checkCases() {
		t.Run(tc.spec.Kind+"/"+tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			o := f.eval(tc.spec)
			for _, s := range []string{o.Detail.JA, o.Detail.EN} {
				if m := internalWords.FindString(s); m != "" {
					t.Errorf("verdict shows %q: %s", m, s)
				}
			}
			if p := i18n.EnglishSentence(o.Detail.JA); p != "" {
				t.Errorf("Japanese verdict has the English %q: %s", p, o.Detail.JA)
			}
		})
	}
}

// The sentences the issue quoted, as they read now.
func TestWordingExamples(t *testing.T) {
	for _, tc := range []struct {
		got  i18n.Text
		want i18n.Text
	}{
		{changeNotYet("nodes", "", "new", ChangeCreated), i18n.Text{JA: "新しい Node はまだ作られていません", EN: "no new Node has been created"}},
		{changeNotYet("services", "fin", "", ChangeIngressSet), i18n.Text{JA: "Service fin にはまだ EXTERNAL-IP が入っていません", EN: "Service fin has not got its EXTERNAL-IP"}},
		{callsWanted("TerminateInstances", "", "", "", 0), i18n.Text{JA: "TerminateInstances の呼び出し", EN: "TerminateInstances calls"}},
		{callsWanted("CreateRoute", "route-controller", "ok", "", 1), i18n.Text{JA: "route-controller による 成功した CreateRoute の呼び出し", EN: "successful CreateRoute call by route-controller"}},
		{whoWrote(nil), i18n.Text{JA: "名前の記録されていない書き手", EN: "a writer the lab could not name"}},
	} {
		if tc.got != tc.want {
			t.Errorf("got %+v, want %+v", tc.got, tc.want)
		}
	}
}
