package format

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ccmlab/ccmlab/exercises/console"
	"github.com/ccmlab/ccmlab/internal/i18n"
)

func TestExercisesLoad(t *testing.T) {
	all, err := LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ex := range all {
		ids = append(ids, ex.ID)
	}
	// The path through the chapter: the interface first; the cluster
	// without a CCM before node initialization, so its "before" state is
	// seen; Services; lifecycle; AWS specifics; the diagnosis challenge;
	// the review last.
	want := []string{"cloudprovider-interface", "no-ccm", "node-init", "pending-on-purpose", "iam-deny", "local-traffic", "lb-class",
		"ingress-ip-hostname", "lbc-annotations", "delete-finalizer", "routes", "terminated-vm", "shutdown-taint", "security-groups",
		"closed-node-group", "subnet-tags", "ip-targets-routes", "ccm-rbac", "ccm-toleration", "rate-limits", "kcm-external", "kubevirt-handson", "lb-owner", "mystery-pending", "review"}
	if !slices.Equal(ids, want) {
		t.Fatalf("exercises = %v, want %v", ids, want)
	}
}

// Both languages complete for every exercise: every text of every file
// has a Japanese and an English version.
func TestBothLanguagesComplete(t *testing.T) {
	all, err := LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range all {
		for where, text := range ex.texts() {
			if strings.TrimSpace(text.JA) == "" {
				t.Errorf("%s %s: ja missing", ex.ID, where)
			}
			if strings.TrimSpace(text.EN) == "" {
				t.Errorf("%s %s: en missing", ex.ID, where)
			}
			// The same text in both is a forgotten translation, unless it
			// is a name such as "kube-proxy".
			if text.JA == text.EN && strings.ContainsAny(text.EN, " \t") {
				t.Errorf("%s %s: ja and en are the same text %q", ex.ID, where, text.EN)
			}
		}
	}
}

// A file with one missing translation does not load, and says where.
func TestMissingTranslationIsRejected(t *testing.T) {
	const good = `
id: tiny
order: 1
minutes: 5
title: {ja: 小さな演習, en: A tiny exercise}
goal: {ja: 目標, en: The goal}
ending: {ja: 終わりに, en: The ending}
setup:
  about: {ja: 何もしません, en: Nothing happens}
steps:
  - id: one
    title: {ja: 一, en: One}
    body: {ja: 本文, en: Body}
    checks: [{kind: nodesReady}]
    hints: [{ja: ヒント, en: A hint}]
    solution: [{cmd: kubectl get nodes}, {do: {ja: 見る, en: Look}}]
    explanation: {ja: 説明, en: Why}
quiz:
  - id: q
    question: {ja: 問い, en: Question}
    choices:
      - {text: {ja: はい, en: "Yes"}, correct: true, why: {ja: 理由, en: Because}}
      - {text: {ja: いいえ, en: "No"}, why: {ja: 理由, en: Because not}}
`
	if _, err := Parse([]byte(good)); err != nil {
		t.Fatalf("the well-formed file fails: %v", err)
	}
	for _, tc := range []struct{ drop, where string }{
		{"en: The goal", "goal.en: Required value"},
		{"ja: 終わりに", "ending.ja: Required value"},
		{"ja: 本文", "steps[0].body.ja: Required value"},
		{"en: A hint", "steps[0].hints[0].en: Required value"},
		{"ja: 説明", "steps[0].explanation.ja: Required value"},
		{"en: Because not", "quiz[0].choices[1].why.en: Required value"},
		{"ja: 問い", "quiz[0].question.ja: Required value"},
	} {
		bad := strings.Replace(good, tc.drop, tc.drop[:strings.Index(tc.drop, ":")+1]+` ""`, 1)
		_, err := Parse([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), tc.where) {
			t.Errorf("without %q: err = %v, want %q", tc.drop, err, tc.where)
		}
	}
	for _, tc := range []struct{ from, to, want string }{
		{"correct: true, ", "", `quiz[0].choices: Invalid value: "0 correct": exactly one choice must be correct`},
		{"kind: nodesReady", "kind: \"\"", "steps[0].checks[0].kind: Required value"},
		{"id: one", "id: One", `steps[0].id: Invalid value: "One": use lower-case words joined by dashes`},
		{"order: 1", "order: 1\ncolour: blue", "unknown field"},
		{"minutes: 5", "minutes: 500", "minutes: Invalid value: 500: say how long the exercise takes, 1 to 180"},
		{"setup:\n", "setup:\n  profiles: [azure-ish]\n", `setup.profiles[0]: Unsupported value: "azure-ish"`},
	} {
		_, err := Parse([]byte(strings.Replace(good, tc.from, tc.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q -> %q: err = %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
	_, err := loadFS(fstest.MapFS{"d/a.yaml": {Data: []byte(good)}, "d/b.yaml": {Data: []byte(good)}}, "d")
	if err == nil || !strings.Contains(err.Error(), "already used") {
		t.Errorf("duplicate ids: err = %v", err)
	}
}

// Every command the exercises suggest is either accepted by the console
// or needs a shell for a reason the student can see, and every step with
// commands has at least one the console runs.
func TestExerciseCommands(t *testing.T) {
	all, err := LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range all {
		for _, st := range ex.Steps {
			runnable := 0
			for _, c := range st.Commands {
				if _, err := console.Parse(c); err == nil {
					runnable++
					continue
				}
				if !strings.ContainsAny(c, "|;") && !strings.HasPrefix(c, "sleep ") {
					t.Errorf("%s/%s: the console refuses %q: %v", ex.ID, st.ID, c, mustRefusal(c))
				}
			}
			if len(st.Commands) > 0 && runnable == 0 {
				t.Errorf("%s/%s: no command runs in the console", ex.ID, st.ID)
			}
		}
	}
}

func mustRefusal(line string) error { _, err := console.Parse(line); return err }

// Every exercise closes with an ending in both languages: two to four
// sentences, the Japanese one without English sentences and with いる in
// kana, since the API serves it as is once the exercise is done.
func TestEveryExerciseHasAnEnding(t *testing.T) {
	all, err := LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range all {
		ja, en := strings.TrimSpace(ex.Ending.JA), strings.TrimSpace(ex.Ending.EN)
		if ja == "" || en == "" {
			t.Errorf("%s: ending missing (ja %q, en %q)", ex.ID, ja, en)
			continue
		}
		if n := strings.Count(ja, "。"); n < 2 || n > 4 {
			t.Errorf("%s: ja ending has %d sentences, want 2 to 4", ex.ID, n)
		}
		if n := strings.Count(en, ". "); n < 1 || n > 3 || !strings.HasSuffix(en, ".") {
			t.Errorf("%s: en ending has %d sentences, want 2 to 4", ex.ID, n+1)
		}
		if p := i18n.EnglishSentence(ja); p != "" {
			t.Errorf("%s: ja ending has English %q", ex.ID, p)
		}
		if strings.Contains(ja, "居") {
			t.Errorf("%s: ja ending writes いる in kanji", ex.ID)
		}
	}
}
