// Package exercises turns the chapter into hands-on labs that check
// themselves against the lab's real state. This package is the service;
// its parts are packages of their own:
//
//   - format: the exercise files (format/defs/*.yaml, embedded; described
//     in docs/exercises.md): one file per exercise, every text in Japanese
//     and English, with steps (commands to try, checks, hints, an
//     explanation shown after success), a quiz with the reasoning for
//     every choice, and the setup "reset exercise" applies. format checks
//     a file's structure.
//   - check: the checker. Named check kinds with parameters, each
//     evaluated against the running lab through check.Env. check.Validate
//     says whether a spec fits its kind; New runs it on every spec of
//     every file, so a file that names an unknown check, misses a
//     translation or has a quiz without exactly one right answer stops the
//     lab from starting.
//   - progress: an SQLite file in the data dir keeps each exercise's
//     start, steps passed and quiz answers across restarts.
//   - console: runs one kubectl command typed in the page with the
//     embedded kubectl, without a shell, under a policy that allows only
//     the chapter's subcommands.
//
// The service offers List, Get, Check, AnswerStep, Answer, RevealHint and
// Reset, the calls behind the HTTP endpoints, and Run, the automatic check. Check evaluates the current step only, on evidence the
// lab's history (lab/history) recorded after the previous step passed, so
// one action never passes two steps; a step may also ask for a value read
// in the lab (AnswerStep). Reset applies an exercise's setup to the
// running lab (switches, faults, objects, fresh nodes, taints, the
// classroom pace), clears its progress and marks where its evidence
// starts.
//
// Where each thing lives, every response type beside the call that builds
// it:
//
//   - service.go: Config, Service, New and the errors the server maps to
//     HTTP statuses;
//   - view.go: List and Get (Summary, Detail and the step views);
//   - check.go: Check (CheckReport, StepResult, CheckResult);
//   - answer.go: AnswerStep, a value typed for a step (StepAnswerResult);
//   - quiz.go: Answer, the quiz (QuestionView, ChoiceView, AnswerResult)
//     and the per-lab order of its choices;
//   - hint.go: RevealHint;
//   - autocheck.go: Run and AutoCheck, the automatic check;
//   - bookkeeping.go: where an exercise's evidence starts in the history,
//     its start time and its counts of wrong answers and hints;
//   - reset.go, reset_extra.go: Reset; reset_state.go: what a failed or
//     interrupted reset means for checks, finishing it at start, and the
//     note it leaves, in both languages;
//   - mystery.go, rbac.go: the diagnosis challenge and the causes it
//     plants;
//   - lang.go: the language a request asks for; availability.go: whether
//     this lab can run an exercise; address.go: commands rewritten to the
//     lab's own address.
package exercises
