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
// The service (service.go, reset.go) offers List, Get, Check, AnswerStep,
// Answer and Reset, the calls behind the HTTP endpoints, and Run, the
// automatic check. Check evaluates the current step only, on evidence the
// lab's history (lab/history) recorded after the previous step passed, so
// one action never passes two steps; a step may also ask for a value read
// in the lab (AnswerStep). Reset applies an exercise's setup to the
// running lab (switches, faults, objects, fresh nodes, taints, the
// classroom pace), clears its progress and marks where its evidence
// starts.
package exercises
